package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/scheduler"
	"github.com/senclaw/sandbox/backends"
)

// ScheduleAddOptions are the flags of `senclaw schedule add`.
type ScheduleAddOptions struct {
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
func (o *ScheduleAddOptions) Spec() (scheduler.Spec, error) {
	spec := scheduler.Spec{Name: &o.Name, Cron: &o.Cron}
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
	env, err := ParseEnv(o.Env)
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
	buf := make([]byte, app.MaxCodeBytes+1)
	n, _ := f.Read(buf)
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	if n > app.MaxCodeBytes {
		return "", fmt.Errorf("%s is larger than %d MiB", path, app.MaxCodeBytes>>20)
	}
	return string(buf[:n]), nil
}

// ScheduleAdd executes `senclaw schedule add`: it prints the new
// schedule's id, and on stderr when it fires next and the policy's notes.
func ScheduleAdd(ctx context.Context, c *client.Client, o *ScheduleAddOptions, io IO) int {
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

// ScheduleList executes `senclaw schedule ls`.
func ScheduleList(ctx context.Context, c *client.Client, jsonOut bool, io IO) int {
	all, err := c.Schedules(ctx)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw schedule ls:", err)
		return exitFor(err)
	}
	if jsonOut {
		if all == nil {
			all = []scheduler.View{}
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

func nextRun(v *scheduler.View) string {
	switch {
	case v.Paused:
		return "paused"
	case v.NextRun == nil:
		return "never"
	}
	return v.NextRun.Local().Format("Mon 2 Jan 15:04")
}

func lastRun(f *scheduler.Firing) string {
	if f == nil {
		return "-"
	}
	s := f.Outcome
	if f.ExitCode != nil && f.Outcome != scheduler.OutcomeRefused {
		s += fmt.Sprintf(" (exit %d)", *f.ExitCode)
	}
	if f.Isolation != "" {
		s += ", " + oneLine(f.Isolation)
	}
	return s + ", " + ago(f.At)
}

// ScheduleRemove executes `senclaw schedule rm`.
func ScheduleRemove(ctx context.Context, c *client.Client, ids []string, io IO) int {
	return eachID(ids, "rm", io, func(id string) (string, error) {
		return "deleted " + id, c.DeleteSchedule(ctx, id)
	})
}

// SchedulePause executes `senclaw schedule pause` (and resume, when
// pause is false).
func SchedulePause(ctx context.Context, c *client.Client, ids []string, pause bool, io IO) int {
	verb := map[bool]string{true: "pause", false: "resume"}[pause]
	return eachID(ids, verb, io, func(id string) (string, error) {
		v, err := c.PauseSchedule(ctx, id, pause)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s: next run %s", v.ID, map[bool]string{true: "paused", false: "resumed"}[pause], nextRun(v)), nil
	})
}

func eachID(ids []string, verb string, io IO, do func(id string) (string, error)) int {
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

// ScheduleRun executes `senclaw schedule run ID`: it fires the schedule
// now, prints its output when it ends and exits as `senclaw run` does
// (the script's own code, 124 on timeout, 126 when refused).
func ScheduleRun(ctx context.Context, c *client.Client, id string, jsonOut bool, io IO) int {
	res, err := c.RunSchedule(ctx, id)
	if err == nil && !jsonOut {
		fmt.Fprint(io.Out, res.Stdout)
		fmt.Fprint(io.Err, res.Stderr)
	}
	return finishRun(res, err, &RunOptions{JSON: jsonOut}, io)
}

// ScheduleHistory executes `senclaw schedule history ID`.
func ScheduleHistory(ctx context.Context, c *client.Client, id string, limit int, jsonOut bool, io IO) int {
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
