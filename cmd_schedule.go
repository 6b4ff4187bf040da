// `senclaw schedule`: scheduled scripts, from the command line.

package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/app/client"
)

func scheduleCommand() *command {
	return &command{
		name: "schedule", summary: "scheduled scripts: cron-timed runs under the Scheduler scripts switch",
		args: "add|ls|rm|pause|resume|run|history ...",
		about: "Each firing goes through the runner with source scheduler: with the Scheduler scripts switch on (senclaw policy --scheduler on) in a one-shot sandbox, refused when nothing can isolate; " +
			"off, directly on the host, recorded as none. A schedule gets the network only when it asks (--network) and the policy's Scheduler network allows it.",
		examples: []string{
			"senclaw schedule add --name backup --cron '0 3 * * *' -- tar czf backup.tgz /data",
			"senclaw schedule ls",
			"senclaw schedule history 3f9c2a1b7d01",
		},
		sub: []*command{scheduleAdd(), scheduleLs(), scheduleIDs("rm", "delete schedules (a run still going goes on)", func(x *invocation, c *client.Client, ids []string) int {
			return cli.ScheduleRemove(x.ctx, c, ids, x.io)
		}),
			scheduleIDs("pause", "stop schedules firing on their own (run still works)", func(x *invocation, c *client.Client, ids []string) int {
				return cli.SchedulePause(x.ctx, c, ids, true, x.io)
			}),
			scheduleIDs("resume", "let paused schedules fire again, from now on", func(x *invocation, c *client.Client, ids []string) int {
				return cli.SchedulePause(x.ctx, c, ids, false, x.io)
			}),
			scheduleRun(), scheduleHistory()},
	}
}

func scheduleAdd() *command {
	return &command{
		name: "add", summary: "create a schedule and print its id",
		args: "--name N --cron EXPR [flags] (-- CMD ARGS... | --file SCRIPT | --language LANG --code-file FILE)",
		about: "EXPR is five fields, minute hour day-of-month month day-of-week (\"30 9 * * 1-5\": weekdays at 09:30), or @hourly, @daily, @weekly, @monthly, @yearly, @every DURATION (at least 10s). " +
			"A wrong expression is refused with the field named and, when one can be guessed, a correction and the next five times it would fire. " +
			"Times are read in --tz (default: this machine's zone), with cron's daylight-saving rules.",
		examples: []string{
			"senclaw schedule add --name backup --cron '0 3 * * *' -- tar czf backup.tgz /data",
			"senclaw schedule add --name report --cron '30 9 * * 1-5' --tz Europe/Berlin --network --language python --code-file report.py",
			"senclaw schedule add --name tidy --cron '@every 90s' --timeout 30s --file tidy.sh",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			o := &cli.ScheduleAddOptions{Set: map[string]bool{}}
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
			jsonOut := jsonFlag(fs)
			return func(args []string) int {
				fs.Visit(func(f *flag.Flag) { o.Set[f.Name] = true })
				o.Argv, o.JSON = args, *jsonOut
				if o.Name == "" || o.Cron == "" {
					fmt.Fprintln(x.io.Err, "senclaw schedule add: give --name and --cron; usage: senclaw schedule add --name N --cron EXPR (-- CMD ARGS... | --file SCRIPT | --language LANG --code-file FILE)")
					return cli.ExitUsage
				}
				return x.withClient(func(c *client.Client) int { return cli.ScheduleAdd(x.ctx, c, o, x.io) })
			}
		},
	}
}

func scheduleLs() *command {
	return &command{
		name: "ls", aliases: []string{"list"}, summary: "list schedules with their next and last runs",
		args:     "[--json]",
		examples: []string{"senclaw schedule ls", "senclaw schedule ls --json | jq '.[] | {name, nextRun}'"},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			jsonOut := jsonFlag(fs)
			return noArgs(x, "schedule ls", func(c *client.Client) int { return cli.ScheduleList(x.ctx, c, *jsonOut, x.io) })
		},
	}
}

// scheduleIDs is a verb that takes schedule ids and no flags.
func scheduleIDs(name, summary string, run func(x *invocation, c *client.Client, ids []string) int) *command {
	return &command{
		name: name, summary: summary, args: "ID...",
		examples: []string{"senclaw schedule " + name + " 3f9c2a1b7d01", "senclaw schedule " + name + " 3f9c2a1b7d01 7d01be3f9c2a"},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			return func(args []string) int {
				if len(args) == 0 {
					fmt.Fprintf(x.io.Err, "senclaw schedule %s: give one or more schedule ids (senclaw schedule ls lists them)\n", name)
					return cli.ExitUsage
				}
				return x.withClient(func(c *client.Client) int { return run(x, c, args) })
			}
		},
	}
}

func scheduleRun() *command {
	return &command{
		name: "run", summary: "fire a schedule now and wait for its run",
		args:  "[--json] ID",
		about: "The exit code is the script's own, 124 on timeout, 126 when the run was refused (the reason is on stderr), as for senclaw run. A paused schedule can be run.",
		examples: []string{
			"senclaw schedule run 3f9c2a1b7d01",
			"senclaw schedule run --json 3f9c2a1b7d01 | jq .run.isolation",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			jsonOut := jsonFlag(fs)
			return oneID(x, "run", func(c *client.Client, id string) int { return cli.ScheduleRun(x.ctx, c, id, *jsonOut, x.io) })
		},
	}
}

func scheduleHistory() *command {
	return &command{
		name: "history", summary: "a schedule's firings: ok, failed, refused, skipped, missed",
		args: "[--limit N] [--json] ID",
		examples: []string{
			"senclaw schedule history 3f9c2a1b7d01",
			"senclaw schedule history --limit 5 --json 3f9c2a1b7d01",
		},
		setup: func(fs *flag.FlagSet, x *invocation) func([]string) int {
			limit := fs.Int("limit", 20, "how many firings, `N`, newest first (1 to 100)")
			jsonOut := jsonFlag(fs)
			return oneID(x, "history", func(c *client.Client, id string) int {
				return cli.ScheduleHistory(x.ctx, c, id, *limit, *jsonOut, x.io)
			})
		},
	}
}

func oneID(x *invocation, verb string, run func(c *client.Client, id string) int) func([]string) int {
	return func(args []string) int {
		if len(args) != 1 {
			fmt.Fprintf(x.io.Err, "senclaw schedule %s: give one schedule id (senclaw schedule ls lists them), got %d arguments\n", verb, len(args))
			return cli.ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return run(c, args[0]) })
	}
}
