package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/backends"
)

func runCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "run [flags] -- CMD ARGS...", Short: "run a command in a one-shot sandbox (or --sandbox ID)",
		Long: "The exit code is the command's own, 124 on timeout, 126 when the run was refused (the reason is on stderr). " +
			"Without --sandbox the run gets a throwaway sandbox, removed afterwards; its record stays (senclaw runs).",
		Example: examples(
			"senclaw run -- python3 -c 'print(6*7)'",
			"senclaw run --learn --write -- python3 fetch.py",
			"senclaw run --fs open --network --timeout 2m -- sh -c 'curl -sI https://example.org'",
			"senclaw run --sandbox 3f9c2a --background -- python3 -m http.server 8000",
		),
	}
	o := sandboxFlags("run", cmd)
	cmd.RunE = x.action(func(args []string) int {
		o.Argv, o.Dir = args, workingDir()
		collectSet(cmd, o)
		o.AtTerminal = isTerminal(x.env.Stdin)
		return x.withClient(func(c *client.Client) int { return run(x.ctx, c, o, x.io) })
	})
	return cmd
}

// TerminalTimeout is a foreground run's timeout when a person runs it
// at a terminal without --timeout: long enough for an install or a
// build; a script (no terminal) and the agents' faces get the sandbox's
// shorter one.
const TerminalTimeout = 10 * time.Minute

// execCommand is `senclaw exec SANDBOX -- CMD`, run --sandbox as docker
// exec has it.
func execCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "exec [flags] SANDBOX -- CMD ARGS...", Short: "run a command in a persistent sandbox (run --sandbox SANDBOX), as docker exec",
		Long: "SANDBOX is an id or a name (senclaw ls). The flags are run's that apply to a persistent sandbox (--env, --timeout, --background, --json, --trace, --ttl, --idle-ttl); " +
			"the sandbox's own settings apply. For a terminal inside it, senclaw shell.",
		Example: examples("senclaw exec build -- make test", "senclaw exec web --background -- python3 -m http.server 8000"),
	}
	o := sandboxFlags("run", cmd)
	cmd.Flags().Lookup("sandbox").Hidden = true
	// Flags before or after SANDBOX (exec build --background -- CMD);
	// the command comes after --, which ends them.
	cmd.Flags().SetInterspersed(true)
	cmd.RunE = x.action(func(args []string) int {
		if len(args) == 0 {
			say(x.io.Err, "senclaw exec: give a sandbox and a command; usage: senclaw exec [flags] SANDBOX -- CMD ARGS...")
			return ExitUsage
		}
		if !idsGiven(x.io, "exec", "a sandbox's id or name (senclaw ls lists them)", args[:1]) {
			return ExitUsage
		}
		if at := cmd.ArgsLenAtDash(); at > 1 {
			say(x.io.Err, "senclaw exec: give the command after --: senclaw exec [flags] SANDBOX -- CMD ARGS...")
			return ExitUsage
		}
		o.SandboxID, o.Argv, o.Dir = args[0], args[1:], workingDir()
		collectSet(cmd, o)
		o.Set["sandbox"] = true
		o.AtTerminal = isTerminal(x.env.Stdin)
		return x.withClient(func(c *client.Client) int { return run(x.ctx, c, o, x.io) })
	})
	return cmd
}

func createCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "create [flags]", Short: "create a persistent sandbox and print its id",
		Example: examples(
			"senclaw create --name build --memory 2048",
			"senclaw create --name web --listen 8000",
		),
	}
	o := sandboxFlags("create", cmd)
	cmd.RunE = x.action(func(args []string) int {
		if len(args) > 0 {
			fmt.Fprintf(x.io.Err, "senclaw create: unexpected arguments %q; run commands in it with senclaw run --sandbox ID -- CMD\n", args)
			return ExitUsage
		}
		o.Dir = workingDir()
		collectSet(cmd, o)
		return x.withClient(func(c *client.Client) int { return create(x.ctx, c, o, x.io) })
	})
	return cmd
}

// sandboxFlags declares the flags of `senclaw run` (cmd "run") or
// `senclaw create` on c; collectSet finishes the options once they are
// parsed.
func sandboxFlags(name string, c *cobra.Command) *runOptions {
	o := &runOptions{Set: map[string]bool{}}
	fs := c.Flags()
	fs.SetInterspersed(false)
	if name == "run" {
		fs.StringVar(&o.SandboxID, "sandbox", "", "run in the persistent sandbox `ID` instead of a one-shot one")
		fs.BoolVar(&o.Background, "background", false, "start the run and return; it runs until stopped (senclaw ps, logs, kill), its output in a log")
		fs.Var(durationFlag{&o.TTL, time.Second}, "ttl", "a --background run's deadline, `DURATION` (1s to 720h; default none)")
		fs.Var(durationFlag{&o.IdleTTL, time.Second}, "idle-ttl", "kill a --background run after this `DURATION` without CPU use or output")
		fs.BoolVar(&o.Trace, "trace", false, "record what the run reads, writes, starts and connects to (senclaw events RUN)")
		fs.BoolVar(&o.Learn, "learn", false, "run it once, traced, in the widest sandbox the owner's policy allows the current folder, and propose the narrowest .senclaw/policy.json for it (as a diff)")
		fs.BoolVar(&o.Write, "write", false, "with --learn, save the proposal as the current folder's .senclaw/policy.json")
	} else {
		fs.StringVar(&o.Name, "name", "", "the sandbox's `NAME`")
	}
	fs.StringVar(&o.Backend, "backend", "", "the backend, `bwrap|landlock|docker|direct` (default: the best available)")
	fs.StringVar(&o.Engine, "engine", "", "the Docker engine to make it on, a `NAME` of senclaw engines ls (default: local, this machine's)")
	fs.StringVar(&o.Image, "image", "", "container `IMAGE` (docker)")
	fs.StringVar(&o.FsMode, "fs", "", "what it may read, `strict|allowlist|open` (default: the settings' default)")
	fs.Var((*stringList)(&o.Mounts), "mount", "a host folder under the workspace, `SRC[:TARGET[:ro|rw][,copy]]` (repeatable; copy: copied in once, for an --engine on another machine)")
	fs.BoolVar(&o.Network, "network", false, "allow network access (through the engine's proxy)")
	fs.Var((*stringList)(&o.AllowDomains), "allow-domain", "with --network, a `NAME` it may reach (and its subdomains); once any is given, only those (repeatable)")
	fs.Var((*stringList)(&o.DenyDomains), "deny-domain", "a `NAME` it may never reach, nor its subdomains (repeatable)")
	fs.Var((*stringList)(&o.Env), "env", "an environment variable, `K=V` (repeatable)")
	fs.Var((*stringList)(&o.Secrets), "secret", "a secret the engine holds that the sandbox may use, by `NAME` (repeatable; senclaw secrets ls): it finds a placeholder in $NAME in upper case, never the value")
	o.Timeout = TerminalTimeout
	fs.Var(durationFlag{&o.Timeout, time.Second}, "timeout", "kill the run after this `DURATION` (1s to 24h, e.g. 90s, 2m, 3h; default: 10m at a terminal, else the sandbox's, 60s unless the settings say otherwise)")
	fs.Float64Var(&o.CPUs, "cpus", 1, "CPU limit in `CORES` (0.1 to 32)")
	fs.IntVar(&o.MemoryMB, "memory", 512, "memory limit in `MB` (64 to 65536)")
	fs.IntVar(&o.Pids, "pids", 256, "process count limit, `N` (16 to 8192)")
	fs.IntVar(&o.DiskMB, "disk", 2048, "workspace disk quota in `MB`")
	fs.Var((*intList)(&o.Listen), "listen", "`PORTS` (>= 1024) it may listen on, reachable at 127.0.0.1 (repeatable or comma-separated)")
	fs.Var((*intList)(&o.Connect), "connect", "remote `PORTS` it may dial")
	fs.Var((*stringList)(&o.AllowHTTP), "allow-http", "an HTTP rule, `'HOST[:PORT] [METHODS [PATHS]]'` (repeatable): on HOST only these methods (comma-separated, * for any) and paths (prefixes or globs, comma-separated) get through")
	fs.Var((*intList)(&o.Loopback), "loopback", "this machine's service `PORTS` it may call, at 127.0.0.1:PORT inside too (22 and 443 as well)")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	fs.BoolVar(&o.Here, "here", false, "make the current directory the sandbox's writable project directory (never purged, no quota)")
	return o
}

// workingDir is where the caller is, against which relative mount
// sources and --here resolve ("" when it cannot be read).
func workingDir() string {
	wd, _ := os.Getwd()
	return wd
}

// collectSet records which of c's own flags were given, so that defaults
// come from the engine's settings rather than from the flags' zero
// values.
func collectSet(c *cobra.Command, o *runOptions) {
	given(c, func(name string) { o.Set[name] = true })
}

// given calls f with each of c's own flags given on the command line
// (not the global ones).
func given(c *cobra.Command, f func(name string)) {
	c.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed {
			f(fl.Name)
		}
	})
}

// runOptions are the flags of `senclaw run` and `senclaw create`.
type runOptions struct {
	SandboxID string
	Name      string
	Backend   string
	Engine    string
	Image     string
	FsMode    string
	Mounts    []string
	Network   bool
	// AllowDomains and DenyDomains are the proxy's rules (--allow-domain,
	// --deny-domain).
	AllowDomains, DenyDomains []string
	Env                       []string
	Secrets                   []string
	AllowHTTP                 []string
	Timeout                   time.Duration
	CPUs                      float64
	MemoryMB                  int
	Pids                      int
	DiskMB                    int
	Listen                    []int
	Connect                   []int
	Loopback                  []int
	Background                bool
	TTL                       time.Duration
	IdleTTL                   time.Duration
	Trace                     bool
	JSON                      bool
	// Here makes Dir the sandbox's writable project dir (--here).
	Here bool
	// Learn proposes a policy for Dir from a traced run (--learn);
	// Write saves it (--write).
	Learn, Write bool
	// AtTerminal: a person runs it at a terminal, so a foreground run
	// without --timeout gets TerminalTimeout.
	AtTerminal bool
	// Dir is the caller's working directory, against which relative
	// mount sources and --here resolve.
	Dir  string
	Argv []string
	// Set lists the flags given explicitly, so defaults come from the
	// engine's settings rather than from flag zero values.
	Set map[string]bool
}

// terminalDefault: a foreground run a person started at a terminal
// without --timeout, which gets TerminalTimeout.
func (o *runOptions) terminalDefault() bool {
	return o.AtTerminal && !o.Background && !o.Set["timeout"]
}

// Config turns the sandbox flags into a SandboxConfig.
func (o *runOptions) Config() (apitype.SandboxConfig, error) {
	var c apitype.SandboxConfig
	if o.Set["name"] {
		c.Name = &o.Name
	}
	if o.Set["backend"] {
		c.Backend = &o.Backend
	}
	if o.Set["engine"] {
		c.Engine = &o.Engine
	}
	if o.Set["image"] {
		c.Image = &o.Image
	}
	if o.Set["fs"] {
		c.FsMode = &o.FsMode
	}
	if o.Set["network"] {
		c.Network = &o.Network
	}
	if o.Set["allow-domain"] {
		c.Domains = o.AllowDomains
	}
	if o.Set["deny-domain"] {
		c.DenyDomains = o.DenyDomains
	}
	if o.Set["cpus"] {
		c.CPUs = &o.CPUs
	}
	if o.Set["memory"] {
		c.MemoryMB = &o.MemoryMB
	}
	if o.Set["pids"] {
		c.Pids = &o.Pids
	}
	if o.Set["disk"] {
		c.DiskMB = &o.DiskMB
	}
	if o.Set["listen"] {
		c.Listen = o.Listen
	}
	if o.Set["connect"] {
		c.Connect = o.Connect
	}
	if o.Set["loopback"] {
		c.Loopback = o.Loopback
	}
	if o.Set["timeout"] {
		ms := int(o.Timeout / time.Millisecond)
		c.TimeoutMs = &ms
	}
	for _, m := range o.Mounts {
		mount, err := parseMount(m)
		if err != nil {
			return c, err
		}
		if !filepath.IsAbs(mount.Source) && o.Dir != "" {
			// The CLI sends what the caller meant: a path from where
			// they are, not from wherever the daemon runs.
			mount.Source = filepath.Join(o.Dir, mount.Source)
		}
		c.Mounts = append(c.Mounts, mount)
	}
	if o.Here {
		if o.Dir == "" {
			return c, fmt.Errorf("--here: the current directory is not known")
		}
		dir := o.Dir
		c.ProjectDir = &dir
	}
	env, err := parseEnv(o.Env)
	if err != nil {
		return c, err
	}
	if len(env) > 0 {
		c.Env = env
	}
	if o.Set["secret"] {
		c.Secrets = o.Secrets
	}
	for _, r := range o.AllowHTTP {
		rule, err := parseHTTPRule(r)
		if err != nil {
			return c, err
		}
		c.AllowHTTP = append(c.AllowHTTP, rule)
	}
	return c, nil
}

// parseHTTPRule parses 'HOST[:PORT] [METHODS [PATHS]]': the methods and
// the paths comma-separated, * (or none) for any. The engine judges the
// parts and names the one it refuses.
func parseHTTPRule(s string) (backends.HTTPRule, error) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 3 {
		return backends.HTTPRule{}, fmt.Errorf("--allow-http %q: use 'HOST[:PORT] [METHODS [PATHS]]', e.g. 'api.github.com GET,HEAD /repos/'", s)
	}
	r := backends.HTTPRule{Host: f[0]}
	list := func(v string) []string {
		if v == "*" {
			return nil
		}
		var out []string
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	if len(f) > 1 {
		r.Methods = list(f[1])
	}
	if len(f) > 2 {
		r.Paths = list(f[2])
	}
	return r, nil
}

// parseMount parses SRC:TARGET[:OPTIONS], the options ro or rw, and
// copy (a copy made once, for a sandbox on another machine's engine),
// separated by commas.
func parseMount(s string) (backends.Mount, error) {
	parts := strings.Split(s, ":")
	m := backends.Mount{Source: parts[0]}
	switch len(parts) {
	case 1:
	case 2:
		m.Target = parts[1]
	case 3:
		m.Target = parts[1]
		for _, opt := range strings.Split(parts[2], ",") {
			switch opt {
			case "ro":
				m.ReadOnly = true
			case "rw":
			case "copy":
				m.Copy = true
			default:
				return m, fmt.Errorf("--mount %q: the third part is ro or rw, and copy, separated by a comma (ro,copy)", s)
			}
		}
	default:
		return m, fmt.Errorf("--mount %q: use SRC[:TARGET[:ro|rw][,copy]]", s)
	}
	return m, nil
}

// parseEnv parses K=V pairs.
func parseEnv(pairs []string) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: use KEY=VALUE", kv)
		}
		env[k] = v
	}
	return env, nil
}

// run executes `senclaw run` through the daemon and returns the process
// exit code: the command's own, 124 on timeout, 126 when refused.
func run(ctx context.Context, c *client.Client, o *runOptions, io streams) int {
	if len(o.Argv) == 0 {
		say(io.Err, "senclaw run: no command given; usage: senclaw run [flags] -- CMD ARGS...")
		return ExitUsage
	}
	if o.Learn || o.Write {
		return learn(ctx, c, o, io)
	}
	body := client.RunBody{Source: apitype.SourceCLI, Argv: o.Argv, Background: o.Background, Trace: o.Trace,
		TTLMs: int(o.TTL / time.Millisecond), IdleTTLMs: int(o.IdleTTL / time.Millisecond)}
	if (o.Set["ttl"] || o.Set["idle-ttl"]) && !o.Background {
		say(io.Err, "senclaw run: --ttl and --idle-ttl are for --background runs; a foreground run has --timeout")
		return ExitUsage
	}
	if o.Background && o.Set["timeout"] {
		say(io.Err, "senclaw run: --timeout does not apply to a --background run, which runs until it is stopped; give --ttl for a deadline")
		return ExitUsage
	}
	var onOutput func(stream, data string)
	if !o.JSON && !o.Background {
		onOutput = func(stream, data string) {
			if stream == "stderr" {
				fmt.Fprint(io.Err, data)
			} else {
				fmt.Fprint(io.Out, data)
			}
		}
	}
	var res *apitype.RunReply
	var err error
	if o.SandboxID != "" {
		for flag := range o.Set {
			switch flag {
			case "sandbox", "env", "timeout", "json", "background", "trace", "ttl", "idle-ttl":
			default:
				say(io.Err, "senclaw run: --%s sets up a one-shot sandbox and cannot be used with --sandbox; the sandbox's own settings apply", flag)
				return ExitUsage
			}
		}
		if body.Env, err = parseEnv(o.Env); err != nil {
			say(io.Err, "senclaw run: %v", err)
			return ExitUsage
		}
		if o.Set["timeout"] {
			body.TimeoutMs = int(o.Timeout / time.Millisecond)
		}
		if o.terminalDefault() {
			body.TimeoutMs = int(TerminalTimeout / time.Millisecond)
		}
		res, err = c.Exec(ctx, o.SandboxID, body, onOutput)
	} else {
		cfg, cerr := o.Config()
		if cerr != nil {
			say(io.Err, "senclaw run: %v", cerr)
			return ExitUsage
		}
		if o.terminalDefault() {
			body.TimeoutMs = int(TerminalTimeout / time.Millisecond)
		}
		res, err = c.RunOnce(ctx, client.RunOnceBody{RunBody: body, Sandbox: cfg}, onOutput)
	}
	return finishRun(res, err, o, io)
}

func finishRun(res *apitype.RunReply, err error, o *runOptions, io streams) int {
	if err != nil {
		say(io.Err, "senclaw: %v", err)
		return runErrorExit(err)
	}
	rec := res.Run
	if o.Trace && !o.JSON {
		defer say(io.Err, "senclaw: traced; see what it did with `senclaw events %s`", rec.ID)
	}
	if !o.JSON {
		// Last of all: what the sandbox was refused, and how to allow it.
		defer sayRefusals(io, rec.ID, res.Refusals)
	}
	if o.JSON {
		writeJSON(io.Out, res)
	} else if o.Background {
		// The run's id alone on stdout, as create prints the sandbox's
		// (and docker run -d the container's): run=$(senclaw run ...).
		say(io.Out, "%s", rec.ID)
		say(io.Err, "senclaw: started run %s in sandbox %s; follow its output with: senclaw logs -f %s", rec.ID, rec.SandboxID, rec.ID)
		say(io.Err, "senclaw: it %s", res.Lifetime)
	}
	if !o.JSON {
		sayNotes(io, res.Notes)
		for _, line := range rec.Policy {
			// What the project's policy file ignored or took down.
			say(io.Err, "senclaw: policy: %s", line)
		}
	}
	switch {
	case o.Background:
		return 0
	case rec.TimedOut:
		say(io.Err, "senclaw: the run timed out after %d ms; the output so far is above", rec.DurationMs)
		if o.terminalDefault() {
			say(io.Err, "senclaw: note: that is the %s a run at a terminal gets without --timeout; give --timeout (up to 24h) for a longer one", TerminalTimeout)
		}
		return ExitTimeout
	case rec.Killed != "":
		say(io.Err, "senclaw: the run was killed: %v", rec.Killed)
		if rec.ExitCode != nil {
			return *rec.ExitCode
		}
		return 137
	case rec.ExitCode == nil:
		say(io.Err, "senclaw: the run failed: %v", rec.Error)
		return ExitFailure
	}
	if rec.Truncated && !o.JSON {
		say(io.Err, "senclaw: note: the output was longer than the engine keeps; the middle was dropped from the record")
	}
	return *rec.ExitCode
}

// sayRefusals prints what run id's sandbox was refused, one line each
// with how to allow it, on stderr, and where to find them again.
func sayRefusals(io streams, id string, refusals []apitype.Refusal) {
	if len(refusals) == 0 {
		return
	}
	say(io.Err, "senclaw: refused during the run (again: senclaw runs show %s --refusals):", id)
	for _, r := range refusals {
		say(io.Err, "senclaw:   %s", r.Line())
	}
}

// create executes `senclaw create`.
func create(ctx context.Context, c *client.Client, o *runOptions, io streams) int {
	cfg, err := o.Config()
	if err != nil {
		say(io.Err, "senclaw create: %v", err)
		return ExitUsage
	}
	res, err := c.Create(ctx, cfg)
	if err != nil {
		say(io.Err, "senclaw create: %v", err)
		return exitFor(err)
	}
	if o.JSON {
		writeJSON(io.Out, res)
	} else {
		say(io.Out, "%s", res.Sandbox.ID)
		sayNotes(io, res.Notes)
	}
	return 0
}

// runErrorExit is the exit code of a run that did not happen: 126 when
// it was refused or the daemon's engine could not start (503), 2 for bad
// input, 1 when the engine failed.
func runErrorExit(err error) int {
	if client.IsRefused(err) {
		return ExitRefused
	}
	return exitFor(err)
}

// learn executes senclaw run --learn: one traced run in the current
// folder, then the proposed policy as a diff, saved with --write.
func learn(ctx context.Context, c *client.Client, o *runOptions, io streams) int {
	if !o.Learn {
		say(io.Err, "senclaw run: --write saves what --learn proposes; give both")
		return ExitUsage
	}
	for flag := range o.Set {
		switch flag {
		case "learn", "write", "here", "timeout", "json", "backend":
		default:
			say(io.Err, "senclaw run: --%s cannot be used with --learn: the learn run gets the widest sandbox the owner's policy allows, and the proposal says what it needs", flag)
			return ExitUsage
		}
	}
	if o.Dir == "" {
		say(io.Err, "senclaw run --learn: the current directory is not known")
		return ExitUsage
	}
	req := apitype.PolicyLearnRequest{ProjectDir: o.Dir, Argv: o.Argv, Write: o.Write, Backend: o.Backend}
	if o.Set["timeout"] {
		req.TimeoutMs = int(o.Timeout / time.Millisecond)
	}
	rep, err := c.PolicyLearn(ctx, req)
	if err != nil {
		say(io.Err, "senclaw: %v", err)
		return runErrorExit(err)
	}
	if o.JSON {
		writeJSON(io.Out, rep)
	} else {
		fmt.Fprint(io.Out, rep.Stdout)
		fmt.Fprint(io.Err, rep.Stderr)
		say(io.Err, "senclaw: learned from run %s (traced; senclaw events %s); proposed for %s:", rep.Run.ID, rep.Run.ID, rep.File)
		if len(rep.Diff) == 0 {
			say(io.Err, "senclaw:   (the file says it already)")
		}
		for _, line := range rep.Diff {
			say(io.Err, "senclaw:   %s", line)
		}
		for _, n := range rep.Notes {
			say(io.Err, "senclaw: note: %s", n)
		}
		switch {
		case rep.Written:
			say(io.Err, "senclaw: written; check it with senclaw policy check -- CMD, run under it with senclaw run --here -- CMD")
		case !o.Write:
			say(io.Err, "senclaw: not written; save it with senclaw run --learn --write -- CMD")
		}
	}
	if rep.Run.ExitCode == nil {
		return ExitFailure
	}
	return *rep.Run.ExitCode
}
