package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func inspectCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "inspect ID...", Short: "print sandboxes (or runs) whole, as JSON, as docker inspect",
		Long:    "An id or a name of a sandbox (senclaw ls) prints the sandbox; an id of a run (senclaw runs) prints its record. The answer is a JSON list, one entry an id, in their order.",
		Example: examples("senclaw inspect build", "senclaw inspect 3f9c2a r18ed49cf9242f034f7e9 | jq '.[0].memoryMb'"),
	}
	cmd.RunE = x.action(func(args []string) int {
		if len(args) == 0 {
			say(x.io.Err, "senclaw inspect: give the id or name of a sandbox (senclaw ls), or the id of a run (senclaw runs)")
			return ExitUsage
		}
		if !idsGiven(x.io, "inspect", "a sandbox's id or name (senclaw ls), or a run's id (senclaw runs)", args) {
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return inspect(x.ctx, c, args, x.io) })
	})
	return cmd
}

// inspect executes `senclaw inspect ID...`.
func inspect(ctx context.Context, c *client.Client, ids []string, io streams) int {
	out := make([]any, 0, len(ids))
	for _, id := range ids {
		sb, err := c.Sandbox(ctx, id)
		if notFound(err) {
			rec, rerr := c.Run(ctx, id)
			if rerr == nil {
				out = append(out, rec)
				continue
			}
			say(io.Err, "senclaw inspect: %q is neither a sandbox (senclaw ls) nor a run (senclaw runs)", id)
			return ExitUsage
		}
		if err != nil {
			say(io.Err, "senclaw inspect: %v", err)
			return exitFor(err)
		}
		out = append(out, sb)
	}
	writeJSON(io.Out, out)
	return 0
}

// notFound reports whether err is the engine's 404.
func notFound(err error) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Status == http.StatusNotFound
}

func statsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "stats [--no-stream] [--json] [SANDBOX...]", Short: "live CPU and memory of sandboxes, as docker stats",
		Long: "Without SANDBOX, every sandbox with processes now. At a terminal the table is redrawn every 2 s until Ctrl-C; " +
			"--no-stream (or output to a file or pipe) prints it once.",
		Example: examples("senclaw stats", "senclaw stats --no-stream build web"),
	}
	noStream := cmd.Flags().Bool("no-stream", false, "print the figures once")
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.action(func(args []string) int {
		if !idsGiven(x.io, "stats", "a sandbox's id or name (senclaw ls lists them)", args) {
			return ExitUsage
		}
		f, _ := x.env.Stdout.(*os.File)
		stream := !*noStream && !*jsonOut && f != nil && isTerminal(f)
		return x.withClient(func(c *client.Client) int { return statsLoop(x.ctx, c, args, stream, *jsonOut, x.io) })
	})
	return cmd
}

// statsLoop executes `senclaw stats`: the CPU and memory of the sandboxes
// named, or of every one with processes, once or every 2 s.
func statsLoop(ctx context.Context, c *client.Client, ids []string, stream, jsonOut bool, io streams) int {
	for {
		code := statsOnce(ctx, c, ids, stream, jsonOut, io)
		if code != 0 || !stream {
			return code
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(2 * time.Second):
		}
	}
}

func statsOnce(ctx context.Context, c *client.Client, ids []string, clear, jsonOut bool, io streams) int {
	named := len(ids) > 0
	names := map[string]string{}
	all, err := c.Sandboxes(ctx)
	if err != nil {
		say(io.Err, "senclaw stats: %v", err)
		return exitFor(err)
	}
	for _, sb := range all {
		if !named {
			ids = append(ids, sb.ID)
		}
		names[sb.ID] = sb.Name
	}
	var stats []*apitype.Stats
	for _, id := range ids {
		st, err := c.SandboxStats(ctx, id)
		if err != nil {
			if !named && notFound(err) {
				continue // deleted since it was listed
			}
			say(io.Err, "senclaw stats: %v", err)
			return exitFor(err)
		}
		if named || st.Running || len(st.Processes) > 0 {
			stats = append(stats, st)
		}
	}
	if jsonOut {
		writeJSON(io.Out, stats)
		return 0
	}
	if clear {
		fmt.Fprint(io.Out, "\x1b[H\x1b[2J") // the terminal's top, cleared
	}
	if len(stats) == 0 {
		say(io.Out, "no sandbox has processes now (senclaw ls lists them; senclaw stats SANDBOX shows one)")
		return 0
	}
	tw := table(io)
	row(tw, "SANDBOX", "NAME", "CPU %", "MEM", "LIMIT", "MEM %", "PIDS")
	for _, st := range stats {
		name := names[st.SandboxID]
		limit, pct := "-", "-"
		if st.MemoryLimitMB > 0 {
			limit = fmt.Sprintf("%d MiB", st.MemoryLimitMB)
			pct = fmt.Sprintf("%.1f%%", 100*st.RSSMB/float64(st.MemoryLimitMB))
		}
		row(tw, st.SandboxID, dash(name), fmt.Sprintf("%.1f%%", st.CPUPercent), fmt.Sprintf("%.1f MiB", st.RSSMB), limit, pct, fmt.Sprint(len(st.Processes)))
	}
	tw.Flush()
	return 0
}
