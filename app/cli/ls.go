package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
)

func lsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "ls [--json]", Aliases: []string{"list"}, Short: "list sandboxes",
		Example: examples("senclaw ls", "senclaw ls --json | jq '.[].id'"),
	}
	jsonOut := tableFlags(cmd, x)
	cmd.RunE = x.noArgs("ls", func(c *client.Client) int { return list(x.ctx, c, *jsonOut, x.io) })
	return cmd
}

// list executes `senclaw ls`.
func list(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
	all, err := c.Sandboxes(ctx)
	if err != nil {
		say(io.Err, "senclaw ls: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		if all == nil {
			all = []apitype.Sandbox{}
		}
		writeJSON(io.Out, all)
		return 0
	}
	tw := table(io)
	row(tw, "ID", "NAME", "BACKEND", "FS", "NETWORK", "LIMITS", "STATE", "LAST USE")
	for _, s := range all {
		backend := s.Backend
		if backend == "" {
			backend = "auto"
		}
		if s.Engine != "" {
			backend += " on " + s.Engine // another machine's engine
		}
		row(tw, s.ID, s.Name, backend, string(s.FsMode), networkCell(s),
			fmt.Sprintf("%g cpu, %d MB, %d pids, %d s", s.CPUs, s.MemoryMB, s.Pids, s.TimeoutMs/1000), s.State, ago(s.LastUsedAt))
	}
	tw.Flush()
	return 0
}

// networkCell is a sandbox's network as the dashboard shows it: on or
// off, then the rules (connect, loopback, listen ports).
func networkCell(s apitype.Sandbox) string {
	parts := []string{"off"}
	if s.Network {
		parts[0] = "on"
	}
	for _, r := range []struct {
		name  string
		ports []int
	}{{"connect", s.Ports.Connect}, {"loopback", s.Ports.Loopback}, {"listen", s.Ports.Listen}} {
		if len(r.ports) > 0 {
			parts = append(parts, r.name+" "+strings.Trim(strings.ReplaceAll(fmt.Sprint(r.ports), " ", ","), "[]"))
		}
	}
	return strings.Join(parts, " · ")
}
