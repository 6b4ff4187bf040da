package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/safetext"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/backends"
)

func appsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "apps add|ls|start|stop|restart|logs|sandbox|rm", Short: "Space Apps: local web apps the engine runs, confines and watches",
		Long: "A Space App is a folder with a server and a senclaw-app.json manifest (see examples/space-apps). The engine starts it in a sandbox of its own " +
			"(or, with its sandbox disabled, on this machine with isolation none), waits for a 2xx from its health path, restarts it per its policy " +
			"(1 s backoff doubling to 60 s; crash-looping after 5 failed starts in 5 minutes) and keeps its log.",
		Example: examples("senclaw apps add examples/space-apps && senclaw apps start notes", "senclaw apps ls"),
		RunE:    verbs,
	}
	add := &cobra.Command{
		Use: "add [--in-place] [--env K=V]... [--json] DIR", Short: "register an app from a folder (copied into the engine's apps/, or --in-place)",
		Long:    "DIR must hold senclaw-app.json at its root. Registering a known id again updates it: its data stays, a forced sandbox is re-applied. --in-place runs it where it is, after the same guards as sandbox mounts (never your home itself, system folders or secret folders).",
		Example: examples("senclaw apps add examples/space-apps", "senclaw apps add --in-place --env API_KEY=abc ~/code/dashboard"),
	}
	inPlace := add.Flags().Bool("in-place", false, "run the app in DIR itself instead of a copy in the engine's apps/ folder")
	var env stringList
	add.Flags().Var(&env, "env", "a variable of the app's own environment, `K=V` (repeatable; requires.env names what it needs)")
	addJSON := jsonFlag(add)
	add.RunE = x.action(func(args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(x.io.Err, "senclaw apps add: give the app's folder; usage: senclaw apps add [--in-place] [--env K=V]... DIR")
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return appsAdd(x.ctx, c, args[0], *inPlace, env, *addJSON, x.io) })
	})

	ls := &cobra.Command{
		Use: "ls [--json]", Aliases: []string{"list"}, Short: "list the apps: state, sandbox, network, process, CPU/RAM, health",
		Example: examples("senclaw apps ls", "senclaw apps ls --json | jq '.[] | select(.needsRestart)'"),
	}
	lsJSON := jsonFlag(ls)
	ls.RunE = x.noArgs("apps ls", func(c *client.Client) int { return appsList(x.ctx, c, *lsJSON, x.io) })

	stop := &cobra.Command{
		Use: "stop ID...", Short: "stop apps (SIGTERM to the tree, SIGKILL after stopTimeoutSec); not restarted until started",
		Example: examples("senclaw apps stop notes", "senclaw apps stop notes dashboard"),
		RunE: x.action(func(args []string) int {
			return x.withClient(func(c *client.Client) int { return appsStop(x.ctx, c, args, x.io) })
		}),
	}

	logs := &cobra.Command{
		Use: "logs [-f] [--bytes N] [--clear] ID", Short: "print an app's log (-f: and follow it; --clear: empty it)",
		Example: examples("senclaw apps logs notes", "senclaw apps logs -f --bytes 4096 notes"),
	}
	follow := logs.Flags().BoolP("follow", "f", false, "follow: keep printing what the app writes (Ctrl-C ends)")
	clear := logs.Flags().Bool("clear", false, "empty the log (and remove its rotated files) instead of printing it")
	bytes := logs.Flags().Int("bytes", apitype.AppDefaultLogRead, fmt.Sprintf("how much of the log's end, `N` bytes (1 to %d)", apitype.AppMaxLogRead))
	logs.RunE = x.action(func(args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(x.io.Err, "senclaw apps logs: give one app id; usage: senclaw apps logs [-f] [--bytes N] ID")
			return ExitUsage
		}
		if *bytes < 1 || *bytes > apitype.AppMaxLogRead {
			fmt.Fprintf(x.io.Err, "senclaw apps logs: --bytes %d: must be between 1 and %d\n", *bytes, apitype.AppMaxLogRead)
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return appsLogs(x.ctx, c, args[0], *follow, *clear, *bytes, x.io) })
	})

	rm := &cobra.Command{
		Use: "rm [--purge] ID...", Aliases: []string{"remove"}, Short: "stop and remove apps (--purge: and the engine's copy of their files)",
		Long:    "--purge removes only the engine's own copy under its apps/ folder, never a folder an app ran in place from.",
		Example: examples("senclaw apps rm notes", "senclaw apps rm --purge notes"),
	}
	purge := rm.Flags().Bool("purge", false, "also remove the engine's copy of the app's files (its data with them)")
	rm.RunE = x.action(func(args []string) int {
		return x.withClient(func(c *client.Client) int { return appsRemove(x.ctx, c, args, *purge, x.io) })
	})

	cmd.AddCommand(add, ls, appsStartVerb(x, "start", "start apps and wait until they answer on their health path"), stop,
		appsStartVerb(x, "restart", "stop apps gracefully and start them again (applies a changed sandbox)"), logs, appsSandboxVerb(x), rm)
	return cmd
}

func appsStartVerb(x *invocation, name, summary string) *cobra.Command {
	cmd := &cobra.Command{
		Use: name + " [--no-wait] ID...", Short: summary,
		Example: examples("senclaw apps "+name+" notes", "senclaw apps "+name+" --no-wait notes dashboard"),
	}
	noWait := cmd.Flags().Bool("no-wait", false, "return once launched, without waiting for the health check")
	cmd.RunE = x.action(func(args []string) int {
		return x.withClient(func(c *client.Client) int { return appsStart(x.ctx, c, name, args, *noWait, x.io) })
	})
	return cmd
}

func appsSandboxVerb(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "sandbox [flags] ID", Short: "show or change an app's sandbox (says what applies at once and what needs a restart)",
		Long: "With no flags it shows the configuration and what the running process got. hosts and allow-http apply to a running app at once; " +
			"the others from its next launch (senclaw apps restart ID).",
		Example: examples("senclaw apps sandbox notes", "senclaw apps sandbox --enabled on --read-mode strict --network hosts --hosts pypi.org,files.pythonhosted.org notes",
			"senclaw apps sandbox --allow-http 'pypi.org GET,HEAD /simple/' notes"),
	}
	ch := &appSandboxChanges{}
	p := &ch.Patch
	str := func(dst **string) func(string) error {
		return func(v string) error { *dst = &v; return nil }
	}
	fs := cmd.Flags()
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
	fs.Func("allow-http", "in the hosts mode, an HTTP rule `'HOST[:PORT] [METHODS [PATHS]]'` (repeatable; replaces the rules; \"\" clears them): on HOST only these methods and paths get through", func(v string) error {
		if p.AllowHTTP == nil {
			p.AllowHTTP = &[]backends.HTTPRule{}
		}
		if strings.TrimSpace(v) == "" {
			return nil
		}
		r, err := parseHTTPRule(v)
		if err != nil {
			return err
		}
		*p.AllowHTTP = append(*p.AllowHTTP, r)
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
	cmd.RunE = x.action(func(args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(x.io.Err, "senclaw apps sandbox: give one app id; usage: senclaw apps sandbox [flags] ID")
			return ExitUsage
		}
		if len(folders) > 0 || *noFolders {
			list := []apitype.AppFolder{}
			for _, f := range folders {
				path, ro := strings.CutSuffix(f, ":ro")
				path = strings.TrimSuffix(path, ":rw")
				if abs, err := filepath.Abs(path); err == nil {
					path = abs
				}
				list = append(list, apitype.AppFolder{Path: path, ReadOnly: ro})
			}
			p.Folders = &list
		}
		changed := false
		given(cmd, func(name string) { changed = changed || name != "json" })
		return x.withClient(func(c *client.Client) int { return appsSandbox(x.ctx, c, args[0], *ch, changed, x.io) })
	})
	return cmd
}

// `senclaw apps`: the Space Apps verbs. Names, states and logs come from
// the apps themselves: they are made safe for a terminal before printing.

// appsAdd executes `senclaw apps add DIR`.
func appsAdd(ctx context.Context, c *client.Client, dir string, inPlace bool, envPairs []string, jsonOut bool, io streams) int {
	abs, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw apps add:", err)
		return ExitUsage
	}
	req := apitype.AppRegisterRequest{Dir: abs, InPlace: inPlace}
	if len(envPairs) > 0 {
		if req.Env, err = parseEnv(envPairs); err != nil {
			fmt.Fprintln(io.Err, "senclaw apps add:", err)
			return ExitUsage
		}
	}
	r, err := c.RegisterApp(ctx, req)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw apps add:", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, r)
		return 0
	}
	fmt.Fprintln(io.Out, r.App.ID)
	fmt.Fprintln(io.Err, "senclaw: "+safetext.Escape(r.Note))
	return 0
}

// appsList executes `senclaw apps ls`.
func appsList(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
	l, err := c.Apps(ctx)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw apps ls:", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, l.Apps)
		return 0
	}
	tw := table(io)
	row(tw, "ID", "NAME", "STATE", "SANDBOX", "READ", "NETWORK", "PID", "UPTIME", "LAUNCHES", "CPU", "RAM", "HEALTH", "URL")
	for _, a := range l.Apps {
		sandbox := a.Sandbox.Isolation
		switch {
		case !a.Sandbox.Enabled && (sandbox == "" || sandbox == "none"):
			sandbox = a.Sandbox.NoSandbox() // no sandbox (manifest), (owner)
		case sandbox == "":
			sandbox = "on (" + a.Sandbox.Backend + ")"
		}
		if a.NeedsRestart {
			sandbox += " NEEDS RESTART"
		}
		network := a.Sandbox.Network
		if network == apitype.AppNetworkHosts {
			network += fmt.Sprintf(" (%d)", a.Sandbox.HostCount)
		}
		if a.Sandbox.Denied > 0 {
			network += fmt.Sprintf(", %d refused", a.Sandbox.Denied)
		}
		pid, uptime, cpu, ram := "-", "-", "-", "-"
		if a.Pid > 0 {
			pid = fmt.Sprint(a.Pid)
			uptime = (time.Duration(a.UptimeSec) * time.Second).String()
			cpu, ram = fmt.Sprintf("%.1f%%", a.CPUPercent), fmt.Sprintf("%.0f MB", a.RSSMB)
		}
		launches := fmt.Sprint(a.Launches)
		if a.Launches > 3 {
			launches += "!"
		}
		row(tw, a.ID, oneLine(a.Name), a.State, sandbox, a.Sandbox.ReadMode, network,
			pid, uptime, launches, cpu, ram, a.Health.Status, dash(a.URL))
	}
	tw.Flush()
	for _, a := range l.Apps {
		switch {
		case a.NeedsRestart:
			fmt.Fprintf(io.Err, "senclaw: %s needs a restart: %s (senclaw apps restart %s)\n", a.ID, safetext.Escape(strings.Join(a.NeedsRestartReasons, "; ")), a.ID)
		case a.State == apitype.AppStateCrashLooping || a.State == apitype.AppStatePortTaken || a.State == apitype.AppStateFailed:
			fmt.Fprintf(io.Err, "senclaw: %s: %s\n", a.ID, safetext.Escape(a.StateText))
		}
	}
	return 0
}

// appsStart executes `senclaw apps start|restart ID...`: it waits for each
// app's health check unless noWait, and fails when one is not healthy.
func appsStart(ctx context.Context, c *client.Client, verb string, ids []string, noWait bool, io streams) int {
	if len(ids) == 0 {
		fmt.Fprintf(io.Err, "senclaw apps %s: give the app's id (senclaw apps ls lists them)\n", verb)
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		call := c.StartApp
		if verb == "restart" {
			call = c.RestartApp
		}
		r, err := call(ctx, id, !noWait)
		if err != nil {
			fmt.Fprintf(io.Err, "senclaw apps %s %s: %v\n", verb, id, err)
			code = max(code, exitFor(err))
			continue
		}
		if !r.OK {
			fmt.Fprintf(io.Err, "senclaw apps %s %s: %s\n", verb, id, safetext.Escape(r.Note))
			for _, l := range r.App.LastLog {
				fmt.Fprintln(io.Err, "  | "+safetext.Escape(l))
			}
			code = max(code, ExitFailure)
			continue
		}
		fmt.Fprintf(io.Out, "%s %s: %s, isolation %s, %s\n", id, r.App.State, safetext.Escape(r.Note), dash(r.App.Sandbox.Isolation), dash(r.App.URL))
	}
	return code
}

// appsStop executes `senclaw apps stop ID...`.
func appsStop(ctx context.Context, c *client.Client, ids []string, io streams) int {
	if len(ids) == 0 {
		fmt.Fprintln(io.Err, "senclaw apps stop: give the app's id (senclaw apps ls lists them)")
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		v, err := c.StopApp(ctx, id)
		if err != nil {
			fmt.Fprintf(io.Err, "senclaw apps stop %s: %v\n", id, err)
			code = max(code, exitFor(err))
			continue
		}
		fmt.Fprintf(io.Out, "%s %s\n", id, v.State)
	}
	return code
}

// appsLogs executes `senclaw apps logs [-f|--clear] ID`.
func appsLogs(ctx context.Context, c *client.Client, id string, follow, clear bool, limit int, io streams) int {
	if clear {
		if err := c.ClearAppLogs(ctx, id); err != nil {
			fmt.Fprintln(io.Err, "senclaw apps logs:", err)
			return exitFor(err)
		}
		fmt.Fprintf(io.Out, "the log of %s is empty\n", id)
		return 0
	}
	if follow {
		err := c.FollowAppLogs(ctx, id, limit, func(text string) { fmt.Fprint(io.Out, safeLog(text)) })
		if err != nil {
			fmt.Fprintln(io.Err, "senclaw apps logs:", err)
			return exitFor(err)
		}
		return 0
	}
	l, err := c.AppLogs(ctx, id, limit)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw apps logs:", err)
		return exitFor(err)
	}
	fmt.Fprint(io.Out, safeLog(l.Text))
	if l.Truncated {
		fmt.Fprintf(io.Err, "senclaw: older output left out; read more with --bytes (up to %d)\n", apitype.AppMaxLogRead)
	}
	return 0
}

// appSandboxChanges are the flags of `senclaw apps sandbox`.
type appSandboxChanges struct {
	Patch apitype.AppSandboxPatch
	JSON  bool
}

// appsSandbox executes `senclaw apps sandbox ID [flags]`: with no change
// it shows the configuration, else it applies the changes and says what
// applied at once and what needs a restart.
func appsSandbox(ctx context.Context, c *client.Client, id string, ch appSandboxChanges, changed bool, io streams) int {
	var view *apitype.AppSandboxView
	var note string
	if changed {
		r, err := c.SetAppSandbox(ctx, id, ch.Patch)
		if err != nil {
			fmt.Fprintln(io.Err, "senclaw apps sandbox:", err)
			return exitFor(err)
		}
		if ch.JSON {
			writeJSON(io.Out, r)
			return 0
		}
		view, note = &r.Sandbox, r.Note
	} else {
		v, err := c.AppSandbox(ctx, id)
		if err != nil {
			fmt.Fprintln(io.Err, "senclaw apps sandbox:", err)
			return exitFor(err)
		}
		if ch.JSON {
			writeJSON(io.Out, v)
			return 0
		}
		view = v
		defer func() {
			// What it gets, in words.
			if iso, err := c.AppIsolation(ctx, id); err == nil {
				for _, l := range iso.Enforced {
					fmt.Fprintln(io.Out, "  enforced: "+safetext.Escape(l))
				}
				for _, l := range iso.NotEnforced {
					fmt.Fprintln(io.Out, "  not enforced: "+safetext.Escape(l))
				}
			}
		}()
	}
	s := view.Settings
	tw := table(io)
	enabled := "off (no barrier: isolation none)"
	if s.Enabled {
		enabled = "on"
	}
	if view.Forced {
		enabled += " (forced by the manifest)"
	}
	hosts := dash(strings.Join(s.Hosts, ", "))
	var folders []string
	for _, f := range s.Folders {
		mode := "rw"
		if f.ReadOnly {
			mode = "ro"
		}
		folders = append(folders, f.Path+":"+mode)
	}
	rows := [][2]string{
		{"sandbox", enabled}, {"read mode", s.ReadMode}, {"network", s.Network}, {"hosts", hosts}, {"HTTP rules", httpRulesText(s.AllowHTTP)},
		{"loopback", dash(strings.Trim(fmt.Sprint(s.Loopback), "[]"))}, {"folders", dash(strings.Join(folders, ", "))},
		{"backend", s.Backend}, {"image", dash(s.Image)}, {"daemon API", fmt.Sprint(s.DaemonAPI)},
		{"running with", dash(view.Isolation)},
	}
	for _, r := range rows {
		row(tw, r[0], r[1])
	}
	tw.Flush()
	if note != "" {
		fmt.Fprintln(io.Err, "senclaw: "+note)
	}
	if view.NeedsRestart {
		fmt.Fprintf(io.Err, "senclaw: it needs a restart: %s (senclaw apps restart %s)\n", safetext.Escape(strings.Join(view.NeedsRestartReasons, "; ")), id)
	}
	return 0
}

// appsRemove executes `senclaw apps rm [--purge] ID...`.
func appsRemove(ctx context.Context, c *client.Client, ids []string, purge bool, io streams) int {
	if len(ids) == 0 {
		fmt.Fprintln(io.Err, "senclaw apps rm: give the app's id (senclaw apps ls lists them)")
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		files, err := c.RemoveApp(ctx, id, purge)
		if err != nil {
			fmt.Fprintf(io.Err, "senclaw apps rm %s: %v\n", id, err)
			code = max(code, exitFor(err))
			continue
		}
		say(io.Out, "%s removed; files: %s", id, files)
	}
	return code
}

// safeLog makes an app's log safe for a terminal: newlines and tabs stay,
// every other character safetext refuses becomes '?'.
func safeLog(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && !safetext.Printable(r) {
			return '?'
		}
		return r
	}, s)
}

// httpRulesText is HTTP rules as --allow-http takes them, "; " between.
func httpRulesText(rules []backends.HTTPRule) string {
	var out []string
	for _, r := range rules {
		m, p := "*", "*"
		if len(r.Methods) > 0 {
			m = strings.Join(r.Methods, ",")
		}
		if len(r.Paths) > 0 {
			p = strings.Join(r.Paths, ",")
		}
		out = append(out, r.Host+" "+m+" "+p)
	}
	return dash(strings.Join(out, "; "))
}
