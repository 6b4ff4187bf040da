package cli

import (
	"context"
	"fmt"

	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/backends"
)

// PolicyChanges are the switches `senclaw policy` may set; nil leaves one
// unchanged.
type PolicyChanges struct {
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

// Policy executes `senclaw policy`: it applies the changes, if any, then
// shows the policy with what each switch means.
func Policy(ctx context.Context, cl *client.Client, c PolicyChanges, io IO) int {
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
	row(tw, "run python", onOff(p.RunPython), "off: every Python code run is refused")
	row(tw, "run node", onOff(p.RunNode), "off: every Node code run is refused")
	row(tw, "code network", onOff(p.CodeNetwork), "network for one-shot code runs")
	tw.Flush()
	printIntegrations(io, integrations, ierr)
	return 0
}

// printIntegrations says which agents' shells the Agent shell switch
// governs, where each integration is installed, and how to add one.
func printIntegrations(io IO, list []agentshell.Integration, err error) {
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
