package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/backends"
)

func policyCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "policy [flags]", Short: "show or set the enforcement switches",
		Long:    "With no flags it shows the switches and what each means. Off for Agent shell and Scheduler scripts runs those paths directly on the host (recorded as none); off for Run Python / Run Node refuses them.",
		Example: examples("senclaw policy", "senclaw policy --agent-shell on --disk-read strict --python off"),
	}
	c := &policyChanges{}
	fs := cmd.Flags()
	fs.Var(onOff{&c.AgentShell}, "agent-shell", "`on|off`: on runs the agent shell sandboxed; off, directly on the host")
	fs.Var(onOff{&c.AgentNetwork}, "agent-network", "`on|off`: network for the sandboxed agent shell")
	fs.Func("disk-read", "what the sandboxed agent shell may read, `strict|allowlist|open`", func(v string) error { c.DiskRead = &v; return nil })
	fs.Func("agent-loopback", "this machine's `PORTS` the agent shell may call (comma-separated; \"\" clears)", func(v string) error {
		var l intList
		if err := l.Set(v); err != nil {
			return err
		}
		c.AgentLoopback = append([]int{}, l...)
		return nil
	})
	fs.Var(onOff{&c.Scheduler}, "scheduler", "`on|off`: on runs scheduler scripts sandboxed; off, directly on the host")
	fs.Var(onOff{&c.SchedulerNetwork}, "scheduler-network", "`on|off`: network for sandboxed scheduler scripts")
	fs.Var(onOff{&c.Python}, "python", "`on|off`: off refuses every Python run")
	fs.Var(onOff{&c.Node}, "node", "`on|off`: off refuses every Node run")
	fs.Var(onOff{&c.CodeNetwork}, "code-network", "`on|off`: network for one-shot code runs")
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.noArgs("policy", func(cl *client.Client) int {
		c.JSON = *jsonOut
		return policy(x.ctx, cl, *c, x.io)
	})
	cmd.AddCommand(policyCheckCommand(x), policySchemaCommand(x))
	return cmd
}

// policyChanges are the switches `senclaw policy` may set; nil leaves one
// unchanged.
type policyChanges struct {
	AgentShell       *bool
	AgentNetwork     *bool
	DiskRead         *string
	AgentLoopback    []int
	Scheduler        *bool
	SchedulerNetwork *bool
	Python           *bool
	Node             *bool
	CodeNetwork      *bool
	JSON             bool
}

// policy executes `senclaw policy`: it applies the changes, if any, then
// shows the policy with what each switch means.
func policy(ctx context.Context, cl *client.Client, c policyChanges, io streams) int {
	cur, err := cl.Policy(ctx)
	if err != nil {
		say(io.Err, "senclaw policy: %v", err)
		return exitFor(err)
	}
	p := *cur
	changed := false
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst, changed = *v, true
		}
	}
	set(&p.ExecShell, c.AgentShell)
	set(&p.ExecNetwork, c.AgentNetwork)
	set(&p.SchedulerScript, c.Scheduler)
	set(&p.SchedulerNetwork, c.SchedulerNetwork)
	set(&p.RunPython, c.Python)
	set(&p.RunNode, c.Node)
	set(&p.CodeNetwork, c.CodeNetwork)
	if c.DiskRead != nil {
		p.ExecFsMode, changed = backends.FsMode(*c.DiskRead), true
	}
	if c.AgentLoopback != nil {
		p.ExecLoopback, changed = c.AgentLoopback, true
	}
	if changed {
		saved, err := cl.SetPolicy(ctx, p)
		if err != nil {
			say(io.Err, "senclaw policy: %v", err)
			return exitFor(err)
		}
		p = *saved
	}
	if c.JSON {
		writeJSON(io.Out, p)
		return 0
	}
	integrations, ierr := cl.Integrations(ctx)
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	tw := table(io)
	row(tw, "agent shell", onOff(p.ExecShell), "off: runs directly on the host (recorded as none); on: sandboxed, refused when nothing can isolate")
	row(tw, "  disk read", string(p.ExecFsMode), "what the sandboxed agent shell may read (strict, allowlist, open)")
	row(tw, "  network", onOff(p.ExecNetwork), "")
	row(tw, "  loopback", fmt.Sprint(p.ExecLoopback), "this machine's ports it may call")
	row(tw, "scheduler scripts", onOff(p.SchedulerScript), "off: run directly (recorded as none); on: one-shot sandbox")
	row(tw, "  network", onOff(p.SchedulerNetwork), "")
	// Who besides the owner takes the two off paths above (and the
	// direct backend) is a setting;
	// a principal that may not read the settings goes without the row.
	if st, err := cl.Settings(ctx); err == nil {
		hp, from := st.Exec.TenantHostPolicy, "(senclaw settings set exec.tenantHostPolicy=...)"
		if st.Exec.EnvOverride != "" {
			hp, from = st.Exec.EnvOverride, "(from SENCLAW_EXEC_TENANT_HOST_POLICY)"
		}
		row(tw, "host exec of others", hp, "with a switch above off or on the direct backend, for all but the owner: deny, warn (run confined by Landlock, recorded) or allow (confined) "+from)
	}
	row(tw, "run python", onOff(p.RunPython), "off: every Python code run is refused")
	row(tw, "run node", onOff(p.RunNode), "off: every Node code run is refused")
	row(tw, "code network", onOff(p.CodeNetwork), "network for one-shot code runs")
	tw.Flush()
	policyFileHint(io)
	printIntegrations(io, integrations, ierr)
	return 0
}

// printIntegrations says which agents' shells the Agent shell switch
// governs, where each integration is installed, and how to add one.
func printIntegrations(io streams, list []agentshell.Integration, err error) {
	fmt.Fprintln(io.Out, "\nagents whose shell goes through the agent shell:")
	if err != nil {
		fmt.Fprintln(io.Out, "  (could not read them:", err, ")")
		return
	}
	tw := table(io)
	n := 0
	for _, in := range list {
		switch {
		case in.Problem != "":
			row(tw, "  "+in.Agent, in.Scope, in.Path, "unreadable: "+in.Problem)
		case in.Installed:
			n++
			row(tw, "  "+in.Agent, in.Scope, in.Path, "installed")
		}
	}
	if n == 0 {
		fmt.Fprintln(tw, "  none\t\t\t")
	}
	tw.Flush()
	fmt.Fprintln(io.Out, "add one: senclaw integrate claude-code | gemini-cli | shell (each with --remove to undo)")
}
