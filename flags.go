// The flags of the subcommands that take more than a few.

package main

import (
	"flag"
	"fmt"
	"os"
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

// runFlags declares the flags of `senclaw run` (cmd "run") or `senclaw
// create` on fs; collectSet finishes the options once fs is parsed.
func runFlags(cmd string, fs *flag.FlagSet) *cli.RunOptions {
	o := &cli.RunOptions{Set: map[string]bool{}}
	if cmd == "run" {
		fs.StringVar(&o.SandboxID, "sandbox", "", "run in the persistent sandbox `ID` instead of a one-shot one")
		fs.BoolVar(&o.Background, "background", false, "start the run and return; it runs until stopped (senclaw ps, logs, kill), its output in a log")
		fs.Var(durationFlag{&o.TTL, time.Second}, "ttl", "a --background run's deadline, `DURATION` (1s to 720h; default none)")
		fs.Var(durationFlag{&o.IdleTTL, time.Second}, "idle-ttl", "kill a --background run after this `DURATION` without CPU use or output")
		fs.BoolVar(&o.Trace, "trace", false, "record what the run reads, writes, starts and connects to (senclaw events RUN)")
	} else {
		fs.StringVar(&o.Name, "name", "", "the sandbox's `NAME`")
	}
	fs.StringVar(&o.Backend, "backend", "", "the backend, `bwrap|landlock|docker|direct` (default: the best available)")
	fs.StringVar(&o.Image, "image", "", "container `IMAGE` (docker)")
	fs.StringVar(&o.FsMode, "fs", "", "what it may read, `strict|allowlist|open` (default: the settings' default)")
	fs.Var((*stringList)(&o.Mounts), "mount", "a host folder under the workspace, `SRC[:TARGET[:ro]]` (repeatable)")
	fs.BoolVar(&o.Network, "network", false, "allow network access (through the engine's proxy)")
	fs.Var((*stringList)(&o.Env), "env", "an environment variable, `K=V` (repeatable)")
	o.Timeout = 30 * time.Second
	fs.Var(durationFlag{&o.Timeout, time.Second}, "timeout", "kill the run after this `DURATION` (1s to 10m, e.g. 90s, 2m)")
	fs.Float64Var(&o.CPUs, "cpus", 1, "CPU limit in `CORES` (0.1 to 32)")
	fs.IntVar(&o.MemoryMB, "memory", 512, "memory limit in `MB` (64 to 65536)")
	fs.IntVar(&o.Pids, "pids", 256, "process count limit, `N` (16 to 8192)")
	fs.IntVar(&o.DiskMB, "disk", 2048, "workspace disk quota in `MB`")
	fs.Var((*intList)(&o.Listen), "listen", "`PORTS` (>= 1024) it may listen on, reachable at 127.0.0.1 (repeatable or comma-separated)")
	fs.Var((*intList)(&o.Connect), "connect", "remote `PORTS` it may dial")
	fs.Var((*intList)(&o.Loopback), "loopback", "this machine's service `PORTS` it may call, at 127.0.0.1:PORT inside too (22 and 443 as well)")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	fs.BoolVar(&o.Here, "here", false, "make the current directory the sandbox's writable project directory (never purged, no quota)")
	o.Dir, _ = os.Getwd()
	return o
}

// collectSet records which flags were given, so that defaults come from
// the engine's settings rather than from the flags' zero values.
func collectSet(fs *flag.FlagSet, o *cli.RunOptions) {
	fs.Visit(func(f *flag.Flag) { o.Set[f.Name] = true })
}

// durationFlag is a duration that must have a unit and be at least min:
// "5" is refused with a hint (seconds? milliseconds?), not guessed at, and
// "0" is refused rather than meaning "no limit".
type durationFlag struct {
	v   *time.Duration
	min time.Duration
}

func (f durationFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return ""
	}
	return f.v.String()
}

func (f durationFlag) Set(s string) error {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return fmt.Errorf("%q needs a unit: say 5s, 90s, 2m or 1h", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration: say 5s, 90s, 2m or 1h", s)
	}
	if d < f.min {
		return fmt.Errorf("%q is too short: at least %s", s, f.min)
	}
	*f.v = d
	return nil
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
	fs.Var(onOff{&c.AgentShell}, "agent-shell", "`on|off`: on runs the agent shell sandboxed; off, directly on the host")
	fs.Var(onOff{&c.AgentNetwork}, "agent-network", "`on|off`: network for the sandboxed agent shell")
	fs.Func("disk-read", "what the sandboxed agent shell may read, `strict|allowlist|open`", func(v string) error { c.DiskRead = &v; return nil })
	fs.Func("agent-loopback", "this machine's `PORTS` the agent shell may call (comma-separated; \"\" clears)", func(v string) error {
		var l intList
		if err := l.Set(v); err != nil {
			return err
		}
		c.AgentLoopback = append([]int{}, l...)
		return nil
	})
	fs.Var(onOff{&c.Scheduler}, "scheduler", "`on|off`: on runs scheduler scripts sandboxed; off, directly on the host")
	fs.Var(onOff{&c.SchedulerNetwork}, "scheduler-network", "`on|off`: network for sandboxed scheduler scripts")
	fs.Var(onOff{&c.Python}, "python", "`on|off`: off refuses every Python run")
	fs.Var(onOff{&c.Node}, "node", "`on|off`: off refuses every Node run")
	fs.Var(onOff{&c.CodeNetwork}, "code-network", "`on|off`: network for one-shot code runs")
	return c
}
