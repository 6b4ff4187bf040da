// `senclaw apps`: the Space Apps verbs (app/spaceapps through the API).

package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/spaceapps"
)

func appsCommand() *command {
	return &command{
		name: "apps", summary: "Space Apps: local web apps the engine runs, confines and watches",
		args: "add|ls|start|stop|restart|logs|sandbox|rm",
		about: "A Space App is a folder with a server and a senclaw-app.json manifest (see examples/space-apps). The engine starts it in a sandbox of its own " +
			"(or, with its sandbox disabled, on this machine with isolation none), waits for a 2xx from its health path, restarts it per its policy " +
			"(1 s backoff doubling to 60 s; crash-looping after 5 failed starts in 5 minutes) and keeps its log.",
		examples: []string{"senclaw apps add examples/space-apps && senclaw apps start notes", "senclaw apps ls"},
		sub: []*command{
			{
				name: "add", summary: "register an app from a folder (copied into the engine's apps/, or --in-place)",
				args:     "[--in-place] [--env K=V]... [--json] DIR",
				about:    "DIR must hold senclaw-app.json at its root. Registering a known id again updates it: its data stays, a forced sandbox is re-applied. --in-place runs it where it is, after the same guards as sandbox mounts (never your home itself, system folders or secret folders).",
				examples: []string{"senclaw apps add examples/space-apps", "senclaw apps add --in-place --env API_KEY=abc ~/code/dashboard"},
				setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
					inPlace := fs.Bool("in-place", false, "run the app in DIR itself instead of a copy in the engine's apps/ folder")
					var env stringList
					fs.Var(&env, "env", "a variable of the app's own environment, `K=V` (repeatable; requires.env names what it needs)")
					jsonOut := jsonFlag(fs)
					return func(args []string) int {
						if len(args) != 1 {
							fmt.Fprintln(x.io.Err, "senclaw apps add: give the app's folder; usage: senclaw apps add [--in-place] [--env K=V]... DIR")
							return cli.ExitUsage
						}
						return x.withClient(func(c *client.Client) int { return cli.AppsAdd(x.ctx, c, args[0], *inPlace, env, *jsonOut, x.io) })
					}
				},
			},
			{
				name: "ls", aliases: []string{"list"}, summary: "list the apps: state, sandbox, network, process, CPU/RAM, health",
				args:     "[--json]",
				examples: []string{"senclaw apps ls", "senclaw apps ls --json | jq '.[] | select(.needsRestart)'"},
				setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
					jsonOut := jsonFlag(fs)
					return noArgs(x, "apps ls", func(c *client.Client) int { return cli.AppsList(x.ctx, c, *jsonOut, x.io) })
				},
			},
			appsStartVerb("start", "start apps and wait until they answer on their health path"),
			{
				name: "stop", summary: "stop apps (SIGTERM to the tree, SIGKILL after stopTimeoutSec); not restarted until started",
				args:     "ID...",
				examples: []string{"senclaw apps stop notes", "senclaw apps stop notes dashboard"},
				setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
					return func(args []string) int {
						return x.withClient(func(c *client.Client) int { return cli.AppsStop(x.ctx, c, args, x.io) })
					}
				},
			},
			appsStartVerb("restart", "stop apps gracefully and start them again (applies a changed sandbox)"),
			{
				name: "logs", summary: "print an app's log (-f: and follow it; --clear: empty it)",
				args:     "[-f] [--bytes N] [--clear] ID",
				examples: []string{"senclaw apps logs notes", "senclaw apps logs -f --bytes 4096 notes"},
				setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
					follow := fs.Bool("f", false, "follow: keep printing what the app writes (Ctrl-C ends)")
					clear := fs.Bool("clear", false, "empty the log (and remove its rotated files) instead of printing it")
					bytes := fs.Int("bytes", spaceapps.DefaultLogRead, fmt.Sprintf("how much of the log's end, `N` bytes (1 to %d)", spaceapps.MaxLogRead))
					return func(args []string) int {
						if len(args) != 1 {
							fmt.Fprintln(x.io.Err, "senclaw apps logs: give one app id; usage: senclaw apps logs [-f] [--bytes N] ID")
							return cli.ExitUsage
						}
						if *bytes < 1 || *bytes > spaceapps.MaxLogRead {
							fmt.Fprintf(x.io.Err, "senclaw apps logs: --bytes %d: must be between 1 and %d\n", *bytes, spaceapps.MaxLogRead)
							return cli.ExitUsage
						}
						return x.withClient(func(c *client.Client) int { return cli.AppsLogs(x.ctx, c, args[0], *follow, *clear, *bytes, x.io) })
					}
				},
			},
			appsSandboxVerb(),
			{
				name: "rm", aliases: []string{"remove"}, summary: "stop and remove apps (--purge: and the engine's copy of their files)",
				args:     "[--purge] ID...",
				about:    "--purge removes only the engine's own copy under its apps/ folder, never a folder an app ran in place from.",
				examples: []string{"senclaw apps rm notes", "senclaw apps rm --purge notes"},
				setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
					purge := fs.Bool("purge", false, "also remove the engine's copy of the app's files (its data with them)")
					return func(args []string) int {
						return x.withClient(func(c *client.Client) int { return cli.AppsRemove(x.ctx, c, args, *purge, x.io) })
					}
				},
			},
		},
	}
}

func appsStartVerb(name, summary string) *command {
	return &command{
		name: name, summary: summary,
		args:     "[--no-wait] ID...",
		examples: []string{"senclaw apps " + name + " notes", "senclaw apps " + name + " --no-wait notes dashboard"},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			noWait := fs.Bool("no-wait", false, "return once launched, without waiting for the health check")
			return func(args []string) int {
				return x.withClient(func(c *client.Client) int { return cli.AppsStart(x.ctx, c, name, args, *noWait, x.io) })
			}
		},
	}
}

func appsSandboxVerb() *command {
	return &command{
		name: "sandbox", summary: "show or change an app's sandbox (says what applies at once and what needs a restart)",
		args: "[flags] ID",
		about: "With no flags it shows the configuration and what the running process got. hosts applies to a running app at once; " +
			"the others from its next launch (senclaw apps restart ID).",
		examples: []string{"senclaw apps sandbox notes", "senclaw apps sandbox --enabled on --read-mode strict --network hosts --hosts pypi.org,files.pythonhosted.org notes"},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			ch := &cli.AppSandboxChanges{}
			p := &ch.Patch
			str := func(dst **string) func(string) error {
				return func(v string) error { *dst = &v; return nil }
			}
			fs.Var(onOff{&p.Enabled}, "enabled", "`on|off`: run it in a sandbox; off runs it on this machine with no barrier")
			fs.Func("read-mode", "what it may read, `MODE`: strict, allowlist or open", str(&p.ReadMode))
			fs.Func("network", "`MODE`: all (public addresses), hosts (only --hosts) or off (no egress)", str(&p.Network))
			fs.Func("hosts", "the `NAMES` the hosts mode allows, comma-separated (replaces the list; \"\" clears it; *.name for subdomains)", func(v string) error {
				l := []string{}
				for _, h := range strings.Split(v, ",") {
					if h = strings.TrimSpace(h); h != "" {
						l = append(l, h)
					}
				}
				p.Hosts = &l
				return nil
			})
			fs.Func("loopback", "this machine's service `PORTS` it may call, comma-separated (replaces; \"\" clears)", func(v string) error {
				var l intList
				if err := l.Set(v); err != nil {
					return err
				}
				ports := append([]int{}, l...)
				p.Loopback = &ports
				return nil
			})
			var folders stringList
			fs.Var(&folders, "folder", "a host folder it sees in its directory, `PATH[:ro]` (repeatable; replaces the list)")
			noFolders := fs.Bool("no-folders", false, "remove every folder")
			fs.Func("backend", "`NAME`: auto, bwrap, docker (an isolating backend of the engine)", str(&p.Backend))
			fs.Func("image", "container `IMAGE` for the docker backend (\"\": the engine's default)", str(&p.Image))
			fs.Var(onOff{&p.DaemonAPI}, "daemon-api", "`on|off`: give the app a token of its own that reaches only its runtime and logs")
			fs.BoolVar(&ch.JSON, "json", false, "print JSON instead of a table")
			return func(args []string) int {
				if len(args) != 1 {
					fmt.Fprintln(x.io.Err, "senclaw apps sandbox: give one app id; usage: senclaw apps sandbox [flags] ID")
					return cli.ExitUsage
				}
				if len(folders) > 0 || *noFolders {
					list := []spaceapps.Folder{}
					for _, f := range folders {
						path, ro := strings.CutSuffix(f, ":ro")
						path = strings.TrimSuffix(path, ":rw")
						if abs, err := filepath.Abs(path); err == nil {
							path = abs
						}
						list = append(list, spaceapps.Folder{Path: path, ReadOnly: ro})
					}
					p.Folders = &list
				}
				changed := false
				fs.Visit(func(f *flag.Flag) { changed = changed || f.Name != "json" })
				return x.withClient(func(c *client.Client) int { return cli.AppsSandbox(x.ctx, c, args[0], *ch, changed, x.io) })
			}
		},
	}
}
