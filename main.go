// Command senclaw runs AI agents' shell commands and code inside an
// operating-system sandbox, and shows and controls what runs.
//
// This file only reads flags and the environment, builds the engine and
// hands it to the face the subcommand asks for.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/mcp"
	"github.com/senclaw/sandbox/backends/direct"
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
	if len(os.Args) > 1 && os.Args[1] == direct.ReaperArg {
		// The child subreaper of a direct run (backends/direct).
		os.Exit(direct.RunReaper(os.Args[2:]))
	}
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
	if cmd == "window" { // started by the desktop app, not listed in usage
		return runWindow(ctx, args, logger, stderr)
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
