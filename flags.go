// The flags of the subcommands that take more than a few.

package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/cli"
)

// intList is a repeatable flag of integers; "8000,8001" also works.
type intList []int

func (l *intList) String() string { return fmt.Sprint(*l) }
func (l *intList) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil {
			return fmt.Errorf("%q is not a port number", part)
		}
		*l = append(*l, n)
	}
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func parseRunFlags(cmd string, args []string, stderr io.Writer) (*cli.RunOptions, int) {
	o := &cli.RunOptions{Set: map[string]bool{}}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mounts, env stringList
	var listen, connect, loopback intList
	if cmd == "run" {
		fs.StringVar(&o.SandboxID, "sandbox", "", "run in this persistent sandbox instead of a one-shot one")
		fs.BoolVar(&o.Background, "background", false, "start the run and return; its output goes to a log file in the workspace")
		fs.BoolVar(&o.Trace, "trace", false, "record what the run reads, writes, starts and connects to (senclaw events RUN)")
	} else {
		fs.StringVar(&o.Name, "name", "", "the sandbox's name")
	}
	fs.StringVar(&o.Backend, "backend", "", "bwrap, landlock, docker or direct (default: the best available)")
	fs.StringVar(&o.Image, "image", "", "container image (docker)")
	fs.StringVar(&o.FsMode, "fs", "", "what it may read: strict, allowlist or open")
	fs.Var(&mounts, "mount", "SRC[:TARGET[:ro]], a host folder under the workspace (repeatable)")
	fs.BoolVar(&o.Network, "network", false, "allow network access")
	fs.Var(&env, "env", "K=V (repeatable)")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "kill the run after this long (1s to 10m)")
	fs.Float64Var(&o.CPUs, "cpus", 1, "CPU limit")
	fs.IntVar(&o.MemoryMB, "memory", 512, "memory limit in MB")
	fs.IntVar(&o.Pids, "pids", 256, "process count limit")
	fs.IntVar(&o.DiskMB, "disk", 2048, "workspace quota in MB")
	fs.Var(&listen, "listen", "ports it may listen on, reachable at 127.0.0.1 (repeatable or comma-separated)")
	fs.Var(&connect, "connect", "remote ports it may dial")
	fs.Var(&loopback, "loopback", "this machine's ports it may call")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return nil, cli.ExitUsage
	}
	fs.Visit(func(f *flag.Flag) { o.Set[f.Name] = true })
	o.Mounts, o.Env = mounts, env
	o.Listen, o.Connect, o.Loopback = listen, connect, loopback
	o.Argv = fs.Args()
	if cmd == "create" && len(o.Argv) > 0 {
		fmt.Fprintf(stderr, "senclaw create: unexpected arguments %q\n", o.Argv)
		return nil, cli.ExitUsage
	}
	return o, 0
}

// onOff is a flag that takes on/off (or true/false).
type onOff struct{ v **bool }

func (f onOff) String() string { return "" }
func (f onOff) Set(s string) error {
	var b bool
	switch strings.ToLower(s) {
	case "on", "true", "1", "yes":
		b = true
	case "off", "false", "0", "no":
	default:
		return fmt.Errorf("%q: use on or off", s)
	}
	*f.v = &b
	return nil
}

// policyFlags declares the flags of `senclaw policy` on fs.
func policyFlags(fs *flag.FlagSet) *cli.PolicyChanges {
	c := &cli.PolicyChanges{}
	fs.Var(onOff{&c.AgentShell}, "agent-shell", "on: the agent shell runs sandboxed; off: directly")
	fs.Var(onOff{&c.AgentNetwork}, "agent-network", "network for the sandboxed agent shell")
	fs.Func("disk-read", "what the sandboxed agent shell may read: strict, allowlist, open", func(v string) error { c.DiskRead = &v; return nil })
	fs.Func("agent-loopback", "this machine's ports the agent shell may call (comma-separated; \"\" clears)", func(v string) error {
		var l intList
		if err := l.Set(v); err != nil {
			return err
		}
		c.AgentLoopback = append([]int{}, l...)
		return nil
	})
	fs.Var(onOff{&c.Scheduler}, "scheduler", "on: scheduler scripts run sandboxed; off: directly")
	fs.Var(onOff{&c.SchedulerNetwork}, "scheduler-network", "network for sandboxed scheduler scripts")
	fs.Var(onOff{&c.Python}, "python", "off refuses every Python code run")
	fs.Var(onOff{&c.Node}, "node", "off refuses every Node code run")
	fs.Var(onOff{&c.CodeNetwork}, "code-network", "network for one-shot code runs")
	return c
}
