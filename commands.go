// The subcommands: one entry each, with its help, flags and examples.

package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/mcp"
)

// commands is the table of senclaw's subcommands, in the order help
// lists them.
func commands() []*command {
	return []*command{
		runCommand(),
		shellCommand(),
		agentShellCommand(),
		integrateCommand(),
		hookCommand(),
		createCommand(),
		{
			name: "ls", aliases: []string{"list"}, summary: "list sandboxes",
			args:     "[--json]",
			examples: []string{"senclaw ls", "senclaw ls --json | jq '.[].id'"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				jsonOut := tableFlags(fs, x)
				return noArgs(x, "ls", func(c *client.Client) int { return cli.List(x.ctx, c, *jsonOut, x.io) })
			},
		},
		{
			name: "rm", aliases: []string{"delete"}, summary: "delete sandboxes (--purge: and their own files)",
			args:     "[--purge] ID...",
			about:    "--purge removes only a sandbox's own workspace under the data dir, never an agent's project directory or a mounted folder.",
			examples: []string{"senclaw rm 3f9c2a", "senclaw rm --purge 3f9c2a 7d01be"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				purge := fs.Bool("purge", false, "also remove the sandbox's own workspace files")
				return func(args []string) int {
					return x.withClient(func(c *client.Client) int { return cli.Remove(x.ctx, c, args, *purge, x.io) })
				}
			},
		},
		cpCommand(),
		psCommand(),
		logsCommand(),
		{
			name: "kill", summary: "kill every process of sandboxes, or one run",
			args:     "(ID... | RUN... | --all)",
			about:    "An id of a sandbox (senclaw ls) kills all its processes; an id of a run (senclaw ps) kills that run.",
			examples: []string{"senclaw kill 3f9c2a", "senclaw kill 8c1d9e0f2a3b   # one background run", "senclaw kill --all"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				all := fs.Bool("all", false, "stop every sandbox")
				return func(args []string) int {
					return x.withClient(func(c *client.Client) int { return cli.Kill(x.ctx, c, args, *all, x.io) })
				}
			},
		},
		{
			name: "runs", summary: "recent runs and the isolation each really got",
			args:     "[--sandbox ID] [--limit N] [--json]",
			examples: []string{"senclaw runs", "senclaw runs --sandbox 3f9c2a --limit 5 --json"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				sandbox := fs.String("sandbox", "", "only the runs of sandbox `ID`")
				limit := fs.Int("limit", 30, "how many runs, `N`, newest first (1 to 5000)")
				jsonOut := tableFlags(fs, x)
				return noArgs(x, "runs", func(c *client.Client) int { return cli.Runs(x.ctx, c, *sandbox, *limit, *jsonOut, x.io) })
			},
		},
		{
			name: "caps", summary: "what this machine can isolate with",
			args:     "[--json]",
			examples: []string{"senclaw caps", "senclaw caps --json"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				jsonOut := tableFlags(fs, x)
				return noArgs(x, "caps", func(c *client.Client) int { return cli.Caps(x.ctx, c, *jsonOut, x.io) })
			},
		},
		traceCommand(),
		scheduleCommand(),
		{
			name: "events", summary: "what a traced run read, wrote, started and connected to",
			args:     "[--kind PREFIX] [--limit N] [--json] RUN",
			examples: []string{"senclaw events 8c1d9e0f2a3b", "senclaw events --kind net 8c1d9e0f2a3b"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				kind := fs.String("kind", "", "only events whose kind starts with `PREFIX`: file, proc, net or denied")
				limit := fs.Int("limit", 200, "how many events, `N` (1 to 5000)")
				jsonOut := tableFlags(fs, x)
				return func(args []string) int {
					if len(args) != 1 {
						fmt.Fprintln(x.io.Err, "senclaw events: give one run id (senclaw runs lists them); usage: senclaw events [--kind PREFIX] [--limit N] RUN")
						return cli.ExitUsage
					}
					return x.withClient(func(c *client.Client) int { return cli.Events(x.ctx, c, args[0], *kind, *limit, *jsonOut, x.io) })
				}
			},
		},
		{
			name: "policy", summary: "show or set the enforcement switches",
			args:     "[flags]",
			about:    "With no flags it shows the switches and what each means. Off for Agent shell and Scheduler scripts runs those paths directly on the host (recorded as none); off for Run Python / Run Node refuses them.",
			examples: []string{"senclaw policy", "senclaw policy --agent-shell on --disk-read strict --python off"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				pc := policyFlags(fs)
				jsonOut := jsonFlag(fs)
				return noArgs(x, "policy", func(c *client.Client) int {
					pc.JSON = *jsonOut
					return cli.Policy(x.ctx, c, *pc, x.io)
				})
			},
		},
		settingsCommand(),
		doctorCommand(),
		appsCommand(),
		serveCommand(),
		{
			name: "sandbox-server", summary: "MCP server over stdio (the sbx_* tools) for agent clients",
			args:     "",
			about:    "stdout carries the MCP protocol only; logs go to stderr. A client of the daemon: it starts a headless one when none answers. Configure an MCP client with {\"command\": \"/path/to/senclaw\", \"args\": [\"sandbox-server\"]}.",
			examples: []string{"senclaw sandbox-server", "senclaw -v sandbox-server 2>mcp.log"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				return func(args []string) int {
					if len(args) > 0 {
						fmt.Fprintf(x.io.Err, "senclaw sandbox-server: it takes no arguments, got %q\n", args)
						return cli.ExitUsage
					}
					return x.withClient(func(c *client.Client) int {
						d, _ := x.dirs()
						redial := func(ctx context.Context) (*client.Client, error) {
							return connectDaemon(ctx, d.runtime, x.dataDir, x.io.Err)
						}
						if err := mcp.ServeStdio(x.ctx, mcp.Options{Client: c, Redial: redial, Version: version, Logger: x.logger}); err != nil {
							fmt.Fprintln(x.io.Err, "senclaw sandbox-server:", err)
							return cli.ExitFailure
						}
						return 0
					})
				}
			},
		},
		{
			name: "url", summary: "print a one-time dashboard login link",
			args:     "",
			about:    "The link logs a browser in once and expires; run it again for another.",
			examples: []string{"senclaw url", "xdg-open \"$(senclaw url)\""},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				return noArgs(x, "url", func(c *client.Client) int {
					d, _ := x.dirs()
					info, err := api.ReadDaemonInfo(d.runtime)
					if err != nil || info.URL == "" {
						fmt.Fprintln(x.io.Err, "senclaw url: the daemon does not serve the dashboard over HTTP (start it with `senclaw serve --listen 127.0.0.1:7878`)")
						return cli.ExitFailure
					}
					u, err := c.LoginURL(x.ctx, info.URL)
					if err != nil {
						fmt.Fprintln(x.io.Err, "senclaw url:", err)
						return cli.ExitFor(err)
					}
					fmt.Fprintln(x.io.Out, u)
					return 0
				})
			},
		},
		{
			name: "stop", summary: "stop the daemon (its runs are killed, its state kept)",
			args:     "",
			examples: []string{"senclaw stop", "senclaw stop && senclaw caps   # a fresh daemon"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				return func(args []string) int {
					if len(args) > 0 {
						fmt.Fprintf(x.io.Err, "senclaw stop: it takes no arguments, got %q\n", args)
						return cli.ExitUsage
					}
					d, err := x.dirs()
					if err != nil {
						fmt.Fprintln(x.io.Err, "senclaw:", err)
						return cli.ExitFailure
					}
					return stopDaemon(x.ctx, d.runtime, x.io.Out, x.io.Err)
				}
			},
		},
		autostartCommand(),
		completionCommand(),
		manpageCommand(),
		{
			name: "version", summary: "print the version",
			args:     "",
			examples: []string{"senclaw version", "senclaw --version"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				return func([]string) int { fmt.Fprintln(x.io.Out, versionLine()); return 0 }
			},
		},
		{
			name: "desktop", hidden: true, summary: "the desktop app (what senclaw with no command runs)",
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				return hostCommand(x, func(opts app.Options) int {
					return runDesktop(x.ctx, opts, x.logger, x.io.Out, x.io.Err)
				})
			},
		},
		{
			name: "window", hidden: true, raw: true, summary: "the desktop app's window process, started by the app",
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				// The table parses the flags first: --socket is declared here
				// and handed on to runWindow, which checks it.
				sock := fs.String("socket", "", "the engine's Unix socket")
				return func(args []string) int {
					return runWindow(x.ctx, append([]string{"--socket", *sock}, args...), x.logger, x.io.Err)
				}
			},
		},
	}
}

// jsonFlag declares --json.
func jsonFlag(fs *flag.FlagSet) *bool { return fs.Bool("json", false, "print JSON instead of a table") }

// tableFlags declares --json and --wide for a command that prints a
// table cut to the terminal's width.
func tableFlags(fs *flag.FlagSet, x *invocation) *bool {
	fs.BoolVar(&x.io.Wide, "wide", false, "show every cell whole, however wide the table gets")
	return jsonFlag(fs)
}

// noArgs is a client command that takes flags only.
func noArgs(x *invocation, name string, run func(c *client.Client) int) func([]string) int {
	return func(args []string) int {
		if len(args) > 0 {
			fmt.Fprintf(x.io.Err, "senclaw %s: unexpected arguments %q; see senclaw %s -h\n", name, args, name)
			return cli.ExitUsage
		}
		return x.withClient(run)
	}
}

// hostCommand runs a command that hosts the engine itself.
func hostCommand(x *invocation, run func(opts app.Options) int) func([]string) int {
	return func([]string) int {
		opts, err := x.options()
		if err != nil {
			fmt.Fprintln(x.io.Err, "senclaw:", err)
			return cli.ExitFailure
		}
		return run(opts)
	}
}

func runCommand() *command {
	return &command{
		name: "run", summary: "run a command in a one-shot sandbox (or --sandbox ID)",
		args: "[flags] -- CMD ARGS...",
		about: "The exit code is the command's own, 124 on timeout, 126 when the run was refused (the reason is on stderr). " +
			"Without --sandbox the run gets a throwaway sandbox, removed afterwards; its record stays (senclaw runs).",
		examples: []string{
			"senclaw run -- python3 -c 'print(6*7)'",
			"senclaw run --fs open --network --timeout 2m -- sh -c 'curl -sI https://example.org'",
			"senclaw run --sandbox 3f9c2a --background -- python3 -m http.server 8000",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			o := runFlags("run", fs)
			return func(args []string) int {
				o.Argv = args
				collectSet(fs, o)
				return x.withClient(func(c *client.Client) int { return cli.Run(x.ctx, c, o, x.io) })
			}
		},
	}
}

func createCommand() *command {
	return &command{
		name: "create", summary: "create a persistent sandbox and print its id",
		args: "[flags]",
		examples: []string{
			"senclaw create --name build --memory 2048",
			"senclaw create --name web --listen 8000",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			o := runFlags("create", fs)
			return func(args []string) int {
				if len(args) > 0 {
					fmt.Fprintf(x.io.Err, "senclaw create: unexpected arguments %q; run commands in it with senclaw run --sandbox ID -- CMD\n", args)
					return cli.ExitUsage
				}
				collectSet(fs, o)
				return x.withClient(func(c *client.Client) int { return cli.Create(x.ctx, c, o, x.io) })
			}
		},
	}
}

func traceCommand() *command {
	verb := func(on bool) *command {
		name, summary := "on", "trace every later run of a sandbox"
		if !on {
			name, summary = "off", "stop tracing a sandbox's runs"
		}
		return &command{
			name: name, summary: summary, args: "ID",
			examples: []string{"senclaw trace " + name + " 3f9c2a", "senclaw trace " + name + " build"},
			setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
				return func(args []string) int {
					if len(args) != 1 {
						fmt.Fprintf(x.io.Err, "senclaw trace %s: give one sandbox id (senclaw ls lists them)\n", name)
						return cli.ExitUsage
					}
					return x.withClient(func(c *client.Client) int {
						return cli.Trace(x.ctx, c, []string{name, args[0]}, x.io)
					})
				}
			},
		}
	}
	return &command{
		name: "trace", summary: "trace a sandbox's later runs (files, processes, connections)",
		args:     "on|off ID",
		about:    "Tracing is for review, not security evidence. Read what a traced run did with senclaw events RUN; trace a single run with senclaw run --trace.",
		examples: []string{"senclaw trace on 3f9c2a", "senclaw trace off 3f9c2a"},
		sub:      []*command{verb(true), verb(false)},
	}
}

func serveCommand() *command {
	return &command{
		name: "serve", summary: "run the engine and its API without a window (servers, CI)",
		args:  "[--listen ADDR] [--allow-remote --tls-cert FILE --tls-key FILE]",
		about: "The API listens on a Unix socket (mode 0600) in the runtime dir and, for the dashboard, on --listen with a bearer token. Open the dashboard with the link senclaw url prints.",
		examples: []string{
			"senclaw serve",
			"senclaw serve --listen 127.0.0.1:9000",
			"senclaw serve --listen ''   # the Unix socket only",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			sf := declareServeFlags(fs)
			return func(args []string) int {
				if len(args) > 0 {
					fmt.Fprintf(x.io.Err, "senclaw serve: unexpected arguments %q\n", args)
					return cli.ExitUsage
				}
				sf.listenGiven = flagGiven(fs, "listen")
				return hostCommand(x, func(opts app.Options) int {
					return serve(x.ctx, opts, *sf, x.logger, x.io.Out, x.io.Err)
				})(nil)
			}
		},
	}
}
