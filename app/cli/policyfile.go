package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/policyfile"
)

// Exit codes of senclaw policy check.
const (
	ExitPolicyRefused = 1
	ExitPolicyBroken  = 2
)

func policySchemaCommand(x *invocation) *cobra.Command {
	return &cobra.Command{
		Use: "schema", Short: "print the JSON schema of the policy files",
		Long: "The owner's ~/.config/senclaw/policy.json and a project's .senclaw/policy.json share it; " +
			"point an editor at it with \"$schema\" in the file.",
		Example: examples("senclaw policy schema > policy.schema.json", "senclaw policy schema | python3 -m json.tool"),
		RunE: x.action(func(args []string) int {
			if len(args) > 0 {
				say(x.io.Err, "senclaw policy schema: unexpected arguments %q", args)
				return ExitUsage
			}
			_, _ = x.io.Out.Write(policyfile.Schema())
			return 0
		}),
	}
}

func policyCheckCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "check [--project DIR] [--agent-shell] [--json] -- CMD ARGS...", Short: "say what the policy files make of a command in a project, running nothing",
		Long: "The effective policy, each value with the file that decided it (the owner's ~/.config/senclaw/policy.json or the project's .senclaw/policy.json, which can only narrow it), " +
			"the project's keys that were ignored because they would widen the owner's, and whether the run would be refused and why. " +
			"It judges the command as senclaw run --here would run it in the project, or with --agent-shell as the agent shell would. " +
			"Exit code: 0 the run would start, 1 it would be refused, 2 a policy file is broken (its line and column are printed).",
		Example: examples(
			"senclaw policy check -- python3 fetch.py",
			"senclaw policy check --project ~/src/app --json -- make test",
		),
	}
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	project := fs.String("project", "", "the project `DIR` (default: the current directory)")
	agent := fs.Bool("agent-shell", false, "judge it as the agent shell would run it (default: as senclaw run --here)")
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.action(func(args []string) int {
		req := apitype.PolicyCheckRequest{ProjectDir: *project, AgentShell: *agent}
		if req.ProjectDir == "" {
			req.ProjectDir = workingDir()
		} else if abs, err := filepath.Abs(req.ProjectDir); err == nil {
			req.ProjectDir = abs
		}
		switch len(args) {
		case 0:
		case 1:
			req.Command = args[0]
		default:
			req.Argv = args
		}
		return x.withClient(func(c *client.Client) int { return policyCheck(x.ctx, c, req, *jsonOut, x.io) })
	})
	return cmd
}

// policyCheck executes senclaw policy check.
func policyCheck(ctx context.Context, c *client.Client, req apitype.PolicyCheckRequest, jsonOut bool, io streams) int {
	rep, err := c.PolicyCheck(ctx, req)
	if err != nil {
		say(io.Err, "senclaw policy check: %v", err)
		return exitFor(err)
	}
	code := 0
	switch {
	case rep.BrokenFile != nil:
		code = ExitPolicyBroken
	case !rep.Allowed:
		code = ExitPolicyRefused
	}
	if jsonOut {
		writeJSON(io.Out, rep)
		return code
	}
	if rep.BrokenFile != nil {
		say(io.Err, "senclaw policy check: %s", rep.Refusal)
		return code
	}
	say(io.Out, "owner's policy:   %s", rep.Owner)
	if rep.Project != "" {
		say(io.Out, "project's policy: %s", rep.Project)
	} else {
		say(io.Out, "project's policy: none (%s)", filepath.Join(req.ProjectDir, ".senclaw", "policy.json"))
	}
	tw := table(io)
	row(tw, "KEY", "VALUE", "FROM")
	for _, v := range rep.Values {
		val, _ := json.Marshal(v.Value)
		from := "owner"
		if v.Source == rep.Project && rep.Project != "" {
			from = "project"
		}
		row(tw, v.Key, string(val), from)
	}
	tw.Flush()
	for _, n := range rep.Notes {
		say(io.Out, "note: %s", n)
	}
	switch {
	case req.Command == "" && len(req.Argv) == 0:
	case rep.Allowed:
		say(io.Out, "allowed: it would run (%s)", rep.Isolation)
	default:
		say(io.Out, "refused: %s", rep.Refusal)
	}
	return code
}

// policyFileHint is the line policy prints under its switches.
func policyFileHint(io streams) {
	fmt.Fprintln(io.Out, "\nthe owner's policy file (~/.config/senclaw/policy.json) holds these switches and the settings' defaults;")
	fmt.Fprintln(io.Out, "a project's .senclaw/policy.json can only narrow it: senclaw policy check -- CMD, senclaw policy schema")
}
