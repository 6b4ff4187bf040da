package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/principal"
)

func tenantsCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "tenants add|ls|set|rm ...", Short: "tenants: principals with a directory, quotas and a tool policy of their own (the owner's)",
		Long: "A tenant is a named principal with its own directory (tenants/NAME/ in the data dir: workspace/ for its folders, runtime/ for what it installs), " +
			"quotas and tool policy. It sees only its own sandboxes, runs, events, schedules and apps; another tenant's ids answer 404.",
		Example: examples("senclaw tenants add alice", "senclaw tenants ls", "senclaw tenants rm alice"),
		RunE:    verbs,
	}
	cmd.AddCommand(tenantsAdd(x), tenantsLs(x), tenantsSet(x), tenantsRm(x))
	return cmd
}

func tenantsAdd(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "add [--sandboxes N] [--runs N] [--disk MB] [--tools POLICY] [--path DIR]... [--json] NAME", Short: "make a tenant and print its first token, once",
		Long: "A tenant is a named principal with its own directory (tenants/NAME/ in the data dir: workspace/ for its folders, runtime/ for what it installs), " +
			"quotas and tool policy. It sees only its own sandboxes, runs, events, schedules and apps; another tenant's ids answer 404. Its mounts and " +
			"folders lie in its directory unless you grant it a path. Give its token to the agent (SENCLAW_TOKEN, senclaw sandbox-server --tenant NAME, the LAN listener).",
		Example: examples("senclaw tenants add alice", "senclaw tenants add --runs 2 --tools sbx_run,sbx_runs,schedules ci"),
	}
	spec := tenantFlags(cmd)
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.action(func(args []string) int {
		s, err := spec()
		if len(args) != 1 || err != nil {
			fmt.Fprintln(x.io.Err, "senclaw tenants add: give the tenant's NAME", errText(err))
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return addTenant(x.ctx, c, args[0], s, *jsonOut, x.io) })
	})
	return cmd
}

func tenantsLs(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "ls [--json]", Aliases: []string{"list"}, Short: "list the tenants with their quotas, policies and directories",
		Example: examples("senclaw tenants ls", "senclaw tenants ls --json | jq '.[].quota'"),
	}
	jsonOut := tableFlags(cmd, x)
	cmd.RunE = x.noArgs("tenants ls", func(c *client.Client) int { return tenantsList(x.ctx, c, *jsonOut, x.io) })
	return cmd
}

func tenantsSet(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "set [--sandboxes N] [--runs N] [--disk MB] [--tools POLICY] [--path DIR]... [--no-paths] NAME", Short: "change a tenant's quota, tool policy or granted paths",
		Example: examples("senclaw tenants set --runs 8 --tools all alice", "senclaw tenants set --path /srv/shared-data alice"),
	}
	spec := tenantFlags(cmd)
	cmd.RunE = x.action(func(args []string) int {
		s, err := spec()
		if len(args) != 1 || err != nil {
			fmt.Fprintln(x.io.Err, "senclaw tenants set: give one tenant's NAME", errText(err))
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return setTenant(x.ctx, c, args[0], s, x.io) })
	})
	return cmd
}

func tenantsRm(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "rm [--purge] NAME...", Aliases: []string{"delete"}, Short: "remove tenants and their tokens (--purge: and their directories)",
		Long:    "Its tokens stop working at once. What it made (sandboxes, runs, schedules, apps) stays, yours to see and remove, and runs no more.",
		Example: examples("senclaw tenants rm alice", "senclaw tenants rm --purge ci"),
	}
	purge := cmd.Flags().Bool("purge", false, "also remove the tenant's directory")
	cmd.RunE = x.action(func(args []string) int {
		if len(args) == 0 {
			fmt.Fprintln(x.io.Err, "senclaw tenants rm: give the tenants' names (senclaw tenants ls)")
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return tenantsRemove(x.ctx, c, args, *purge, x.io) })
	})
	return cmd
}

// tenantFlags declares the flags of tenants add and set.
func tenantFlags(cmd *cobra.Command) func() (tenantSpec, error) {
	fs := cmd.Flags()
	sandboxes := fs.Int("sandboxes", 0, "the quota of persistent sandboxes, `N` (0: no bound)")
	runs := fs.Int("runs", 0, "the quota of runs at once, `N` (0: no bound)")
	disk := fs.Int("disk", 0, "the disk quota of its directory and each of its workspaces, in `MB` (0: no bound)")
	tf := toolsFlagOf(cmd, toolsUsage+" (a new tenant's default: sbx_capabilities, sbx_events, sbx_run, sbx_runs)")
	var paths stringList
	fs.Var(&paths, "path", "grant it a host folder `DIR` beyond its own directory (repeatable; the mount guard still applies)")
	noPaths := fs.Bool("no-paths", false, "take back every path granted")
	return func() (tenantSpec, error) {
		var s tenantSpec
		if fs.Changed("sandboxes") {
			s.Sandboxes = sandboxes
		}
		if fs.Changed("runs") {
			s.Runs = runs
		}
		if fs.Changed("disk") {
			s.DiskMB = disk
		}
		var err error
		s.Tools, err = tf.tools()
		if len(paths) > 0 || *noPaths {
			p := []string(paths)
			if p == nil {
				p = []string{}
			}
			s.Paths = &p
		}
		return s, err
	}
}

// tenantSpec is what `senclaw tenants add` and `set` are given; nil
// fields are not given.
type tenantSpec struct {
	Sandboxes, Runs, DiskMB *int
	Tools                   *[]string // nil slice inside: every tool
	Paths                   *[]string
}

// body is spec as the API takes it, over the tenant's current quota.
func (s tenantSpec) body(cur principal.Quota) map[string]any {
	b := map[string]any{}
	if s.Sandboxes != nil || s.Runs != nil || s.DiskMB != nil {
		q := cur
		if s.Sandboxes != nil {
			q.Sandboxes = *s.Sandboxes
		}
		if s.Runs != nil {
			q.Runs = *s.Runs
		}
		if s.DiskMB != nil {
			q.DiskMB = *s.DiskMB
		}
		b["quota"] = q
	}
	if s.Tools != nil {
		b["tools"] = *s.Tools
	}
	if s.Paths != nil {
		b["paths"] = *s.Paths
	}
	return b
}

// addTenant executes `senclaw tenants add NAME`: the tenant, its
// directory, and its first token, printed once.
func addTenant(ctx context.Context, c *client.Client, name string, spec tenantSpec, jsonOut bool, io streams) int {
	body := spec.body(principal.DefaultTenantQuota)
	body["name"] = name
	var added apitype.TenantAdded
	if err := c.Do(ctx, "POST", "/tenants", nil, body, &added); err != nil {
		say(io.Err, "senclaw tenants add: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		writeJSON(io.Out, added)
		return 0
	}
	printIssued(io, added.Token, "tenant's first token", false)
	q := added.Tenant.Quota
	say(io.Err, "senclaw: note: tenant %s: its directory %s (workspace/ for its folders, runtime/ for what it installs); quota %d sandboxes, %d runs at once, %d MB; tools %s", name, added.Tenant.Dir, q.Sandboxes, q.Runs, q.DiskMB, toolsCell(added.Tenant.Tools))
	return 0
}

// tenantsList executes `senclaw tenants ls`.
func tenantsList(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
	var out struct {
		Tenants []apitype.TenantView `json:"tenants"`
	}
	if err := c.Do(ctx, "GET", "/tenants", nil, nil, &out); err != nil {
		say(io.Err, "senclaw tenants ls: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		if out.Tenants == nil {
			out.Tenants = []apitype.TenantView{}
		}
		writeJSON(io.Out, out.Tenants)
		return 0
	}
	tw := table(io)
	row(tw, "NAME", "SANDBOXES", "RUNS", "DISK", "TOOLS", "TOKENS", "PATHS", "DIR")
	for _, t := range out.Tenants {
		row(tw, t.Name, limitCell(t.Quota.Sandboxes, ""), limitCell(t.Quota.Runs, ""), limitCell(t.Quota.DiskMB, " MB"), toolsCell(t.Tools), fmt.Sprint(t.Tokens), orDash(strings.Join(t.Paths, ",")), t.Dir)
	}
	tw.Flush()
	return 0
}

func limitCell(n int, unit string) string {
	if n == 0 {
		return "no bound"
	}
	return fmt.Sprint(n) + unit
}

// setTenant executes `senclaw tenants set NAME ...`.
func setTenant(ctx context.Context, c *client.Client, name string, spec tenantSpec, io streams) int {
	var cur apitype.TenantView
	if err := c.Do(ctx, "GET", "/tenants/"+name, nil, nil, &cur); err != nil {
		say(io.Err, "senclaw tenants set: %v", err)
		return exitFor(err)
	}
	var v apitype.TenantView
	if err := c.Do(ctx, "PATCH", "/tenants/"+name, nil, spec.body(cur.Quota), &v); err != nil {
		say(io.Err, "senclaw tenants set: %v", err)
		return exitFor(err)
	}
	say(io.Out, "tenant %s: quota %s sandboxes, %s runs at once, %s; tools %s; paths %s", v.Name, limitCell(v.Quota.Sandboxes, ""), limitCell(v.Quota.Runs, ""), limitCell(v.Quota.DiskMB, " MB"), toolsCell(v.Tools), orDash(strings.Join(v.Paths, ", ")))
	return 0
}

// tenantsRemove executes `senclaw tenants rm NAME...`.
func tenantsRemove(ctx context.Context, c *client.Client, names []string, purge bool, io streams) int {
	code := 0
	for _, n := range names {
		q := map[string][]string{}
		if purge {
			q["purge"] = []string{"true"}
		}
		var out struct {
			Files string `json:"files"`
		}
		if err := c.Do(ctx, "DELETE", "/tenants/"+n, q, nil, &out); err != nil {
			say(io.Err, "senclaw tenants rm %s: %v", n, err)
			code = exitFor(err)
			continue
		}
		say(io.Out, "removed tenant %s and its tokens; its files %s; what it made stays, yours to see and remove (senclaw ls, runs)", n, out.Files)
	}
	return code
}
