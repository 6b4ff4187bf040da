package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/backends"
)

func scheduleCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "schedule add|ls|rm|pause|resume|run|history ...", Short: "scheduled scripts: cron-timed runs under the Scheduler scripts switch",
		Long: "Each firing goes through the runner with source scheduler: with the Scheduler scripts switch on (senclaw policy --scheduler on) in a one-shot sandbox, refused when nothing can isolate; " +
			"off, directly on the host, recorded as none. A schedule gets the network only when it asks (--network) and the policy's Scheduler network allows it.",
		Example: examples(
			"senclaw schedule add --name backup --cron '0 3 * * *' -- tar czf backup.tgz /data",
			"senclaw schedule ls",
			"senclaw schedule history 3f9c2a1b7d01",
		),
		RunE: verbs,
	}
	cmd.AddCommand(scheduleAdd(x), scheduleLs(x),
		scheduleIDs(x, "rm", "delete schedules (a run still going goes on)", func(c *client.Client, ids []string) int {
			return scheduleRemove(x.ctx, c, ids, x.io)
		}),
		scheduleIDs(x, "pause", "stop schedules firing on their own (run still works)", func(c *client.Client, ids []string) int {
			return schedulePause(x.ctx, c, ids, true, x.io)
		}),
		scheduleIDs(x, "resume", "let paused schedules fire again, from now on", func(c *client.Client, ids []string) int {
			return schedulePause(x.ctx, c, ids, false, x.io)
		}),
		scheduleRun(x), scheduleHistory(x))
	return cmd
}

func scheduleAdd(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "add --name N --cron EXPR [flags] (-- CMD ARGS... | --file SCRIPT | --language LANG --code-file FILE)", Short: "create a schedule and print its id",
		Long: "EXPR is five fields, minute hour day-of-month month day-of-week (\"30 9 * * 1-5\": weekdays at 09:30), or @hourly, @daily, @weekly, @monthly, @yearly, @every DURATION (at least 10s). " +
			"A wrong expression is refused with the field named and, when one can be guessed, a correction and the next five times it would fire. " +
			"Times are read in --tz (default: this machine's zone), with cron's daylight-saving rules.",
		Example: examples(
			"senclaw schedule add --name backup --cron '0 3 * * *' -- tar czf backup.tgz /data",
			"senclaw schedule add --name report --cron '30 9 * * 1-5' --tz Europe/Berlin --network --language python --code-file report.py",
			"senclaw schedule add --name tidy --cron '@every 90s' --timeout 30s --file tidy.sh",
		),
	}
	o := &scheduleAddOptions{Set: map[string]bool{}}
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	fs.StringVar(&o.Name, "name", "", "the schedule's `NAME` (1 to 100 characters)")
	fs.StringVar(&o.Cron, "cron", "", "when it fires, a cron `EXPR` (five fields or @hourly, @daily, @every 90s, ...)")
	fs.StringVar(&o.TimeZone, "tz", "", "the IANA time `ZONE` the expression is read in, e.g. Europe/Berlin or UTC (default: this machine's)")
	fs.BoolVar(&o.Network, "network", false, "the script wants the network (it also needs the policy's Scheduler network when sandboxed)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "kill a run after this `DURATION` (1s to 10m, e.g. 90s, 5m)")
	fs.Var((*stringList)(&o.Env), "env", "an environment variable of its runs, `K=V` (repeatable)")
	fs.StringVar(&o.Missed, "missed", "skip", "times missed while the engine was down, `skip|once`: forget them, or run one catch-up at start")
	fs.DurationVar(&o.Jitter, "jitter", 0, "delay each firing by a fixed share of this `DURATION` (0 to 1h), to spread schedules sharing a minute")
	fs.BoolVar(&o.Paused, "paused", false, "create it paused (senclaw schedule resume ID starts it)")
	fs.StringVar(&o.File, "file", "", "a bash `SCRIPT` file to run")
	fs.StringVar(&o.Language, "language", "", "the language of --code-file, `python|node|bash`")
	fs.StringVar(&o.CodeFile, "code-file", "", "a `FILE` of code in --language")
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.action(func(args []string) int {
		given(cmd, func(name string) { o.Set[name] = true })
		o.Argv, o.JSON = args, *jsonOut
		if o.Name == "" || o.Cron == "" {
			fmt.Fprintln(x.io.Err, "senclaw schedule add: give --name and --cron; usage: senclaw schedule add --name N --cron EXPR (-- CMD ARGS... | --file SCRIPT | --language LANG --code-file FILE)")
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return addSchedule(x.ctx, c, o, x.io) })
	})
	return cmd
}

func scheduleLs(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "ls [--json]", Aliases: []string{"list"}, Short: "list schedules with their next and last runs",
		Example: examples("senclaw schedule ls", "senclaw schedule ls --json | jq '.[] | {name, nextRun}'"),
	}
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.noArgs("schedule ls", func(c *client.Client) int { return scheduleList(x.ctx, c, *jsonOut, x.io) })
	return cmd
}

// scheduleIDs is a verb that takes schedule ids and no flags.
func scheduleIDs(x *invocation, name, summary string, run func(c *client.Client, ids []string) int) *cobra.Command {
	return &cobra.Command{
		Use: name + " ID|NAME...", Short: summary,
		Example: examples("senclaw schedule "+name+" 3f9c2a1b7d01", "senclaw schedule "+name+" 3f9c2a1b7d01 7d01be3f9c2a"),
		RunE: x.action(func(args []string) int {
			if len(args) == 0 {
				fmt.Fprintf(x.io.Err, "senclaw schedule %s: give one or more schedule ids (senclaw schedule ls lists them)\n", name)
				return ExitUsage
			}
			return x.withClient(func(c *client.Client) int { return run(c, args) })
		}),
	}
}

func scheduleRun(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "run [--json] ID|NAME", Short: "fire a schedule now and wait for its run",
		Long: "The exit code is the script's own, 124 on timeout, 126 when the run was refused (the reason is on stderr), as for senclaw run. A paused schedule can be run.",
		Example: examples(
			"senclaw schedule run 3f9c2a1b7d01",
			"senclaw schedule run --json 3f9c2a1b7d01 | jq .run.isolation",
		),
	}
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.oneSchedule("run", func(c *client.Client, id string) int { return fireSchedule(x.ctx, c, id, *jsonOut, x.io) })
	return cmd
}

func scheduleHistory(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "history [--limit N] [--json] ID|NAME", Short: "a schedule's firings: ok, failed, refused, skipped, missed",
		Example: examples(
			"senclaw schedule history 3f9c2a1b7d01",
			"senclaw schedule history --limit 5 --json 3f9c2a1b7d01",
		),
	}
	limit := cmd.Flags().Int("limit", 20, "how many firings, `N`, newest first (1 to 100)")
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.oneSchedule("history", func(c *client.Client, id string) int {
		return showScheduleHistory(x.ctx, c, id, *limit, *jsonOut, x.io)
	})
	return cmd
}

// oneSchedule is the action of a verb that takes one schedule id.
func (x *invocation) oneSchedule(verb string, run func(c *client.Client, id string) int) func(*cobra.Command, []string) error {
	return x.action(func(args []string) int {
		if len(args) != 1 {
			fmt.Fprintf(x.io.Err, "senclaw schedule %s: give one schedule id (senclaw schedule ls lists them), got %d arguments\n", verb, len(args))
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return run(c, args[0]) })
	})
}

// scheduleAddOptions are the flags of `senclaw schedule add`.
type scheduleAddOptions struct {
	Name, Cron, TimeZone string
	Network, Paused      bool
	Timeout, Jitter      time.Duration
	Env                  []string
	Missed               string
	// What it runs: Argv (a command, run by bash), File (a bash script)
	// or Language with CodeFile.
	Argv               []string
	File               string
	Language, CodeFile string
	JSON               bool
	// Set lists the flags given, so that defaults are the engine's.
	Set map[string]bool
}

// Spec turns the flags into a schedule's spec, reading the script or
// code file.
func (o *scheduleAddOptions) Spec() (apitype.ScheduleSpec, error) {
	spec := apitype.ScheduleSpec{Name: &o.Name, Cron: &o.Cron}
	var sources []string
	if len(o.Argv) > 0 {
		sources = append(sources, "-- CMD")
	}
	if o.File != "" {
		sources = append(sources, "--file")
	}
	if o.CodeFile != "" {
		sources = append(sources, "--code-file")
	}
	if len(sources) != 1 {
		return spec, fmt.Errorf("say what to run with exactly one of -- CMD ARGS..., --file SCRIPT or --language LANG --code-file FILE (got %s)", orNone(sources))
	}
	lang := strings.ToLower(o.Language)
	switch {
	case o.CodeFile != "" && lang == "":
		return spec, fmt.Errorf("--code-file needs --language (python, node or bash)")
	case o.CodeFile == "" && lang != "" && lang != "bash":
		return spec, fmt.Errorf("--language %q goes with --code-file; -- CMD and --file are run by bash", o.Language)
	}
	var code string
	switch {
	case len(o.Argv) > 0:
		code = backends.ShellJoin(o.Argv)
		lang = "bash"
	default:
		path := o.File
		if path == "" {
			path = o.CodeFile
		} else {
			lang = "bash"
		}
		data, err := readCodeFile(path)
		if err != nil {
			return spec, err
		}
		code = data
	}
	spec.Code, spec.Language = &code, &lang
	if o.Set["tz"] {
		spec.TimeZone = &o.TimeZone
	}
	if o.Set["network"] {
		spec.Network = &o.Network
	}
	if o.Set["paused"] {
		spec.Paused = &o.Paused
	}
	if o.Set["missed"] {
		spec.Missed = &o.Missed
	}
	if o.Set["timeout"] {
		ms := int(o.Timeout / time.Millisecond)
		spec.TimeoutMs = &ms
	}
	if o.Set["jitter"] {
		sec := int(o.Jitter / time.Second)
		spec.JitterSec = &sec
	}
	env, err := parseEnv(o.Env)
	if err != nil {
		return spec, err
	}
	if len(env) > 0 {
		spec.Env = env
	}
	return spec, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " and ")
}

func readCodeFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, apitype.MaxCodeBytes+1)
	n, _ := f.Read(buf)
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	if n > apitype.MaxCodeBytes {
		return "", fmt.Errorf("%s is larger than %d MiB", path, apitype.MaxCodeBytes>>20)
	}
	return string(buf[:n]), nil
}

// addSchedule executes `senclaw schedule add`: it prints the new
// schedule's id, and on stderr when it fires next and the policy's notes.
func addSchedule(ctx context.Context, c *client.Client, o *scheduleAddOptions, io streams) int {
	spec, err := o.Spec()
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw schedule add:", err)
		return ExitUsage
	}
	res, err := c.CreateSchedule(ctx, spec)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw schedule add:", err)
		return exitFor(err)
	}
	if o.JSON {
		writeJSON(io.Out, res)
		return 0
	}
	v := res.Schedule
	fmt.Fprintln(io.Out, v.ID)
	fmt.Fprintf(io.Err, "senclaw: %s (%s, %s); next run %s\n", v.Description, v.Cron, v.Zone, nextRun(v))
	for _, n := range strings.Split(res.Note, "; ") {
		if n != "" {
			fmt.Fprintln(io.Err, "senclaw: note:", n)
		}
	}
	return 0
}

// scheduleList executes `senclaw schedule ls`.
func scheduleList(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
	all, err := c.Schedules(ctx)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw schedule ls:", err)
		return exitFor(err)
	}
	if jsonOut {
		if all == nil {
			all = []apitype.Schedule{}
		}
		writeJSON(io.Out, all)
		return 0
	}
	tw := table(io)
	fmt.Fprintln(tw, "ID\tNAME\tWHEN\tCRON\tNEXT RUN\tLAST RUN")
	for _, v := range all {
		row(tw, v.ID, oneLine(v.Name), v.Description, v.Cron+" ("+v.Zone+")", nextRun(&v), lastRun(v.LastRun))
	}
	tw.Flush()
	return 0
}

func nextRun(v *apitype.Schedule) string {
	switch {
	case v.Paused:
		return "paused"
	case v.NextRun == nil:
		return "never"
	}
	return v.NextRun.Local().Format("Mon 2 Jan 15:04")
}

func lastRun(f *apitype.Firing) string {
	if f == nil {
		return "-"
	}
	s := f.Outcome
	if f.ExitCode != nil && f.Outcome != apitype.OutcomeRefused {
		s += fmt.Sprintf(" (exit %d)", *f.ExitCode)
	}
	if f.Isolation != "" {
		s += ", " + oneLine(f.Isolation)
	}
	return s + ", " + ago(f.At)
}

// scheduleRemove executes `senclaw schedule rm`.
func scheduleRemove(ctx context.Context, c *client.Client, ids []string, io streams) int {
	return eachID(ids, "rm", io, func(id string) (string, error) {
		return "deleted " + id, c.DeleteSchedule(ctx, id)
	})
}

// schedulePause executes `senclaw schedule pause` (and resume, when
// pause is false).
func schedulePause(ctx context.Context, c *client.Client, ids []string, pause bool, io streams) int {
	verb := map[bool]string{true: "pause", false: "resume"}[pause]
	return eachID(ids, verb, io, func(id string) (string, error) {
		v, err := c.PauseSchedule(ctx, id, pause)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s: next run %s", v.ID, map[bool]string{true: "paused", false: "resumed"}[pause], nextRun(v)), nil
	})
}

func eachID(ids []string, verb string, io streams, do func(id string) (string, error)) int {
	if len(ids) == 0 {
		fmt.Fprintf(io.Err, "senclaw schedule %s: give one or more schedule ids (senclaw schedule ls lists them)\n", verb)
		return ExitUsage
	}
	code := 0
	for _, id := range ids {
		msg, err := do(id)
		if err != nil {
			fmt.Fprintf(io.Err, "senclaw schedule %s: %v\n", verb, err)
			code = exitFor(err)
			continue
		}
		fmt.Fprintln(io.Out, msg)
	}
	return code
}

// fireSchedule executes `senclaw schedule run ID`: it fires the schedule
// now, prints its output when it ends and exits as `senclaw run` does
// (the script's own code, 124 on timeout, 126 when refused).
func fireSchedule(ctx context.Context, c *client.Client, id string, jsonOut bool, io streams) int {
	res, err := c.RunSchedule(ctx, id)
	if err == nil && !jsonOut {
		fmt.Fprint(io.Out, res.Stdout)
		fmt.Fprint(io.Err, res.Stderr)
	}
	return finishRun(res, err, &runOptions{JSON: jsonOut}, io)
}

// showScheduleHistory executes `senclaw schedule history ID`.
func showScheduleHistory(ctx context.Context, c *client.Client, id string, limit int, jsonOut bool, io streams) int {
	h, err := c.ScheduleHistory(ctx, id, limit)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw schedule history:", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, h)
		return 0
	}
	tw := table(io)
	fmt.Fprintln(tw, "DUE\tTRIGGER\tOUTCOME\tEXIT\tISOLATION\tDURATION\tRUN\tREASON")
	for _, f := range h {
		exit := "-"
		if f.ExitCode != nil {
			exit = fmt.Sprint(*f.ExitCode)
		}
		dur := "-"
		if f.DurationMs > 0 {
			dur = (time.Duration(f.DurationMs) * time.Millisecond).String()
		}
		row(tw, f.At.Local().Format("Mon 2 Jan 15:04:05"), f.Trigger, f.Outcome, exit, dash(oneLine(f.Isolation)), dur, dash(f.RunID), oneLine(f.Reason))
	}
	tw.Flush()
	return 0
}
