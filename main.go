// Command senclaw runs AI agents' shell commands and code inside an
// operating-system sandbox, and shows and controls what runs.
//
// This file only reads flags and the environment, builds the engine and
// hands it to the face the subcommand asks for.
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/mcp"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/docker"
	"github.com/senclaw/sandbox/backends/landlock"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `senclaw: run AI agents' commands and code in an OS sandbox.

Usage:
  senclaw                              the desktop app: engine, dashboard window and tray
                                       (headless builds, or no display: as serve)
  senclaw run [flags] -- CMD ARGS...   run a command in a one-shot sandbox (or --sandbox ID)
  senclaw create [flags]               create a persistent sandbox, print its id
  senclaw ls [--json]                  list sandboxes
  senclaw rm [--purge] ID...           delete sandboxes (--purge: and their files)
  senclaw kill (ID... | --all)         kill every process of sandboxes
  senclaw runs [--sandbox ID] [--limit N] [--json]
                                       recent runs and the isolation each got
  senclaw caps [--json]                what this machine can isolate with
  senclaw trace on|off ID              trace a sandbox's later runs
  senclaw events [--kind K] RUN        what a traced run read, wrote, started, connected to
  senclaw policy [flags]               show or set the enforcement switches
  senclaw serve [--listen ADDR]        run the engine and its API without a window
  senclaw sandbox-server               MCP server over stdio (the sbx_* tools) for agent clients
  senclaw url                          print a one-time dashboard login link
  senclaw stop                         stop the daemon
  senclaw version

The CLI is a client of the daemon: it starts a headless one when none runs.

Global flags (before the subcommand): --data-dir DIR (or SENCLAW_DATA_DIR), -v
Run "senclaw SUBCOMMAND -h" for a subcommand's flags.
`

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	global := flag.NewFlagSet("senclaw", flag.ContinueOnError)
	global.SetOutput(stderr)
	global.Usage = func() { fmt.Fprint(stderr, usage) }
	dataDir := global.String("data-dir", "", "where the database and workspaces live")
	verbose := global.Bool("v", false, "log what the engine does to stderr")
	if err := global.Parse(args); err != nil {
		return cli.ExitUsage
	}
	args = global.Args()
	if len(args) == 0 {
		args = []string{"desktop"} // no subcommand: the desktop app (runDesktop)
	}
	cmd, args := args[0], args[1:]
	io := cli.IO{Out: stdout, Err: stderr}
	switch cmd {
	case "version", "--version":
		fmt.Fprintln(stdout, "senclaw", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	opts, err := engineOptions(*dataDir, logger)
	if err != nil {
		fmt.Fprintln(stderr, "senclaw:", err)
		return cli.ExitFailure
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if cmd == "serve" {
		return serve(ctx, opts, args, logger, stdout, stderr)
	}
	if cmd == "desktop" {
		return runDesktop(ctx, opts, logger, stdout, stderr)
	}
	// Every other command is a client of the daemon.
	connect := func() (*client.Client, int) {
		c, err := connectDaemon(ctx, opts.RuntimeDir, *dataDir, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "senclaw:", err)
			return nil, cli.ExitFailure
		}
		return c, 0
	}
	switch cmd {
	case "run", "create":
		o, code := parseRunFlags(cmd, args, stderr)
		if o == nil {
			return code
		}
		c, code := connect()
		if c == nil {
			return code
		}
		if cmd == "run" {
			return cli.Run(ctx, c, o, io)
		}
		return cli.Create(ctx, c, o, io)
	case "ls", "list", "caps", "runs", "rm", "delete", "kill", "policy", "trace", "events":
		return clientCommand(ctx, cmd, args, connect, io)
	case "url":
		c, code := connect()
		if c == nil {
			return code
		}
		info, err := api.ReadDaemonInfo(opts.RuntimeDir)
		if err != nil || info.URL == "" {
			fmt.Fprintln(stderr, "senclaw url: the daemon does not serve the dashboard over HTTP (start it with `senclaw serve --listen 127.0.0.1:7878`)")
			return cli.ExitFailure
		}
		u, err := c.LoginURL(ctx, info.URL)
		if err != nil {
			fmt.Fprintln(stderr, "senclaw url:", err)
			return cli.ExitFailure
		}
		fmt.Fprintln(stdout, u)
		return 0
	case "stop":
		return stopDaemon(ctx, opts.RuntimeDir, stdout, stderr)
	case "sandbox-server":
		if len(args) > 0 {
			fmt.Fprintf(stderr, "senclaw sandbox-server: unexpected arguments %q\n", args)
			return cli.ExitUsage
		}
		c, code := connect()
		if c == nil {
			return code
		}
		// stdout carries the MCP protocol only; everything else goes to stderr.
		redial := func(ctx context.Context) (*client.Client, error) {
			return connectDaemon(ctx, opts.RuntimeDir, *dataDir, stderr)
		}
		if err := mcp.ServeStdio(ctx, mcp.Options{Client: c, Redial: redial, Version: version, Logger: logger}); err != nil {
			fmt.Fprintln(stderr, "senclaw sandbox-server:", err)
			return cli.ExitFailure
		}
		return 0
	}
	fmt.Fprintf(stderr, "senclaw: unknown command %q\n\n%s", cmd, usage)
	return cli.ExitUsage
}

// clientCommand runs the simple client subcommands.
func clientCommand(ctx context.Context, cmd string, args []string, connect func() (*client.Client, int), io cli.IO) int {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Err)
	jsonOut := fs.Bool("json", false, "print JSON")
	var purge, all *bool
	var sandbox, kind *string
	var limit *int
	var pc *cli.PolicyChanges
	switch cmd {
	case "rm", "delete":
		purge = fs.Bool("purge", false, "also remove the sandbox's files (only ever its own workspace)")
	case "kill":
		all = fs.Bool("all", false, "stop every sandbox")
	case "runs":
		sandbox = fs.String("sandbox", "", "only this sandbox's runs")
		limit = fs.Int("limit", 30, "how many runs")
	case "policy":
		pc = policyFlags(fs)
	case "events":
		kind = fs.String("kind", "", "only events whose kind starts with this (file, proc, net, denied)")
		limit = fs.Int("limit", 200, "how many events (1 to 5000)")
	}
	if err := fs.Parse(args); err != nil {
		return cli.ExitUsage
	}
	if pc != nil {
		pc.JSON = *jsonOut
	}
	c, code := connect()
	if c == nil {
		return code
	}
	switch cmd {
	case "ls", "list":
		return cli.List(ctx, c, *jsonOut, io)
	case "caps":
		return cli.Caps(ctx, c, *jsonOut, io)
	case "runs":
		return cli.Runs(ctx, c, *sandbox, *limit, *jsonOut, io)
	case "rm", "delete":
		return cli.Remove(ctx, c, fs.Args(), *purge, io)
	case "kill":
		return cli.Kill(ctx, c, fs.Args(), *all, io)
	case "trace":
		return cli.Trace(ctx, c, fs.Args(), io)
	case "events":
		return cli.Events(ctx, c, fs.Arg(0), *kind, *limit, *jsonOut, io)
	default:
		return cli.Policy(ctx, c, *pc, io)
	}
}

// engineOptions resolves the engine's directories from the flag and the
// environment, and builds the backends in order of preference.
func engineOptions(dataDirFlag string, logger *slog.Logger) (app.Options, error) {
	home, _ := os.UserHomeDir()
	euid := os.Geteuid()
	dataDir := firstNonEmpty(dataDirFlag, os.Getenv("SENCLAW_DATA_DIR"))
	if dataDir == "" {
		switch {
		case os.Getenv("XDG_DATA_HOME") != "":
			dataDir = filepath.Join(os.Getenv("XDG_DATA_HOME"), "senclaw")
		case euid == 0:
			// A root engine runs sandboxed code as an unprivileged user,
			// which must be able to reach its workspace: /root is private.
			dataDir = "/var/lib/senclaw"
		case home != "":
			dataDir = filepath.Join(home, ".local", "share", "senclaw")
		default:
			return app.Options{}, fmt.Errorf("no data dir: set --data-dir or SENCLAW_DATA_DIR")
		}
	}
	configDir := os.Getenv("XDG_CONFIG_HOME")
	if configDir == "" && home != "" {
		configDir = filepath.Join(home, ".config")
	}
	if configDir != "" {
		configDir = filepath.Join(configDir, "senclaw")
	}
	runtimeDir := os.Getenv("XDG_RUNTIME_DIR")
	if runtimeDir == "" {
		runtimeDir = filepath.Join(os.TempDir(), "senclaw-"+strconv.Itoa(os.Getuid()))
	} else {
		runtimeDir = filepath.Join(runtimeDir, "senclaw")
	}
	var sandboxUser *backends.Credential
	if euid == 0 {
		sandboxUser = &backends.Credential{UID: 65534, GID: 65534}
	}
	return app.Options{
		DataDir:    dataDir,
		ConfigDir:  configDir,
		RuntimeDir: runtimeDir,
		HomeDir:    home,
		Backends: []backends.Backend{
			bwrap.New(bwrap.Options{Logger: logger, SandboxUser: sandboxUser}),
			docker.New(docker.Options{
				Getenv:       os.Getenv,
				HomeDir:      home,
				DefaultImage: app.DefaultSettings().DefaultImage,
				PoolDir:      filepath.Join(dataDir, "docker-pool"),
				Owner:        dockerOwner(dataDir),
				Logger:       logger,
			}),
			direct.New(),
		},
		Probes:    []app.Prober{app.ProbeFunc(landlock.Name, func(context.Context) backends.Capability { return landlock.Probe() })},
		Logger:    logger,
		EUID:      euid,
		Forwarder: findForwarder(),
	}, nil
}

// findForwarder finds senclaw-netfwd, the in-sandbox network forwarder:
// next to this executable, else on PATH. "" when there is none: the
// engine then refuses runs that need network and says how to build it.
func findForwarder() string {
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		p := filepath.Join(filepath.Dir(self), "senclaw-netfwd")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath("senclaw-netfwd"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}

// dockerOwner labels this engine's containers so that engines of other
// users (or other data dirs) on the same daemon leave them alone.
func dockerOwner(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return fmt.Sprintf("uid%d-%x", os.Getuid(), sum[:6])
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

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
	fs.StringVar(&o.Backend, "backend", "", "bwrap, docker or direct (default: the best available)")
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
