package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/principal"
)

// The owner's verbs of the principals (tokens, tenants, security-events):
// a secret is printed once, on stdout alone (a pipe may take it), with a
// note on stderr that it is not shown again.

func tokensCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "tokens add|ls|rotate|set|rm ...", Short: "agent tokens: made once, stored hashed, shown once (the owner's)",
		Long: "Every client of the engine is a principal: the owner (your socket, the dashboard, the API token), an agent (a token of these), " +
			"an app or a tenant. An agent may do what the sbx_* tools do, inside the policy, never change it. senclaw mcp-config makes one for each " +
			"MCP client, the hooks and senclaw sandbox-server one for each face. The engine keeps only each secret's SHA-256.",
		Example: examples(
			"senclaw tokens add --tools sbx_run,sbx_runs ci-bot",
			"senclaw tokens ls",
			"senclaw tokens rotate ci-bot",
		),
		RunE: verbs,
	}
	cmd.AddCommand(tokensAdd(x), tokensLs(x), tokensRotate(x), tokensSet(x), tokensRm(x))
	return cmd
}

func tokensAdd(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "add [--tenant T] [--tools POLICY] [--json] NAME", Short: "make an agent token and print its secret, once",
		Long: "An agent token acts as an agent: what the sbx_* tools do, inside the policy, never change it (the exec policy, settings, tokens, tenants, " +
			"host schedules and unsandboxed apps are the owner's). With --tenant it acts for that tenant: its objects, quotas and tool policy. " +
			"The engine keeps only the secret's SHA-256: it is printed this once. Give it to the agent as SENCLAW_TOKEN or as its bearer token.",
		Example: examples(
			"senclaw tokens add --tools sbx_run,sbx_runs ci-bot",
			"senclaw tokens add --tenant alice alice-ide",
			"SENCLAW_TOKEN=$(senclaw tokens add bot) some-agent",
		),
	}
	tenant := cmd.Flags().String("tenant", "", "act for tenant `NAME` (senclaw tenants ls)")
	tf := toolsFlagOf(cmd, toolsUsage)
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.action(func(args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(x.io.Err, "senclaw tokens add: give the token's NAME (lowercase letters, digits and . _ : -)")
			return ExitUsage
		}
		tools, err := tf.tools()
		if err != nil {
			fmt.Fprintln(x.io.Err, "senclaw tokens add:", err)
			return ExitUsage
		}
		var list []string
		if tools != nil {
			list = *tools
		}
		return x.withClient(func(c *client.Client) int { return addToken(x.ctx, c, args[0], *tenant, list, *jsonOut, x.io) })
	})
	return cmd
}

func tokensLs(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "ls [--json]", Aliases: []string{"list"}, Short: "list the tokens: names, kind, tenant, policy, made and last used (never a secret)",
		Example: examples("senclaw tokens ls", "senclaw tokens ls --json | jq -r '.[].name'"),
	}
	jsonOut := tableFlags(cmd, x)
	cmd.RunE = x.noArgs("tokens ls", func(c *client.Client) int { return tokensList(x.ctx, c, *jsonOut, x.io) })
	return cmd
}

func tokensRotate(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "rotate [--json] NAME", Short: "give a token a new secret, printed once; the old one stops working",
		Example: examples("senclaw tokens rotate ci-bot", "senclaw tokens rotate --json ci-bot | jq -r .secret"),
	}
	jsonOut := jsonFlag(cmd)
	cmd.RunE = x.action(func(args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(x.io.Err, "senclaw tokens rotate: give one token's name (senclaw tokens ls)")
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return rotateToken(x.ctx, c, args[0], *jsonOut, x.io) })
	})
	return cmd
}

func tokensSet(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "set --tools POLICY NAME", Short: "change a token's own tool policy",
		Example: examples("senclaw tokens set --tools sbx_run,sbx_runs,sbx_events ci-bot", "senclaw tokens set --tools all ci-bot"),
	}
	tf := toolsFlagOf(cmd, toolsUsage)
	cmd.RunE = x.action(func(args []string) int {
		tools, err := tf.tools()
		if len(args) != 1 || tools == nil || err != nil {
			fmt.Fprintln(x.io.Err, "senclaw tokens set: give one token's NAME and --tools POLICY", errText(err))
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int { return setToken(x.ctx, c, args[0], *tools, x.io) })
	})
	return cmd
}

func tokensRm(x *invocation) *cobra.Command {
	return &cobra.Command{
		Use: "rm NAME...", Aliases: []string{"delete"}, Short: "remove tokens: they stop working at once",
		Example: examples("senclaw tokens rm ci-bot", "senclaw tokens rm mcp:cursor mcp:claude-code"),
		RunE: x.action(func(args []string) int {
			if len(args) == 0 {
				fmt.Fprintln(x.io.Err, "senclaw tokens rm: give the tokens' names (senclaw tokens ls)")
				return ExitUsage
			}
			return x.withClient(func(c *client.Client) int { return tokensRemove(x.ctx, c, args, x.io) })
		}),
	}
}

// toolsFlag is --tools, given or not.
type toolsFlag struct {
	set   bool
	value string
}

func (f *toolsFlag) String() string     { return f.value }
func (f *toolsFlag) Type() string       { return "string" }
func (f *toolsFlag) Set(v string) error { f.set, f.value = true, v; return nil }

// toolsFlagOf declares --tools on cmd.
func toolsFlagOf(cmd *cobra.Command, usage string) *toolsFlag {
	tf := &toolsFlag{}
	cmd.Flags().Var(tf, "tools", usage)
	return tf
}

// tools is the policy --tools gives (nil: not given; a nil slice inside:
// every tool).
func (f *toolsFlag) tools() (*[]string, error) {
	if !f.set {
		return nil, nil
	}
	t, err := parseTools(f.value)
	return &t, err
}

const toolsUsage = "the tool `POLICY`: tools and groups (agent_shell, schedules, space_apps), comma-separated; all for every tool its scopes allow, none for none"

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}

// toolsCell is a tool policy in a table cell.
func toolsCell(tools []string) string {
	if tools == nil {
		return "all"
	}
	if len(tools) == 0 {
		return "none"
	}
	return strings.Join(tools, ",")
}

// parseTools reads --tools: a comma-separated tool policy; "all" is none
// (the scopes decide alone), "" or "none" the empty one.
func parseTools(s string) ([]string, error) {
	switch strings.TrimSpace(s) {
	case "all":
		return nil, nil
	case "", "none":
		return []string{}, nil
	}
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	if _, err := principal.CheckTools(out); err != nil {
		return nil, fmt.Errorf("--tools: %v", err)
	}
	return out, nil
}

// printIssued prints a token's secret, once.
func printIssued(io streams, iss *apitype.TokenIssued, what string, jsonOut bool) {
	if jsonOut {
		writeJSON(io.Out, iss)
		return
	}
	fmt.Fprintln(io.Out, iss.Secret)
	say(io.Err, "senclaw: note: the %s's secret, shown this once: the engine keeps only its SHA-256. An agent sends it as Authorization: Bearer, or SENCLAW_TOKEN for the CLI and senclaw sandbox-server; senclaw tokens rotate %s gives a new one", what, iss.Token.Name)
}

// addToken executes `senclaw tokens add NAME`.
func addToken(ctx context.Context, c *client.Client, name, tenant string, tools []string, jsonOut bool, io streams) int {
	iss, err := c.AddToken(ctx, name, tenant, tools)
	if err != nil {
		say(io.Err, "senclaw tokens add: %v", err)
		return exitFor(err)
	}
	printIssued(io, iss, "agent token", jsonOut)
	return 0
}

// tokensList executes `senclaw tokens ls`: names, kind, tenant, policy,
// when made and last used; never a secret.
func tokensList(ctx context.Context, c *client.Client, jsonOut bool, io streams) int {
	all, err := c.Tokens(ctx)
	if err != nil {
		say(io.Err, "senclaw tokens ls: %v", err)
		return exitFor(err)
	}
	if jsonOut {
		if all == nil {
			all = []apitype.TokenView{}
		}
		writeJSON(io.Out, all)
		return 0
	}
	tw := table(io)
	row(tw, "NAME", "KIND", "TENANT", "TOOLS", "CREATED", "LAST USED", "ID")
	for _, t := range all {
		used := "never"
		if !t.LastUsedAt.IsZero() {
			used = ago(t.LastUsedAt)
		}
		row(tw, t.Name, string(t.Kind), orDash(t.Tenant), toolsCell(t.Tools), t.CreatedAt.Local().Format(time.DateTime), used, t.ID)
	}
	tw.Flush()
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rotateToken executes `senclaw tokens rotate NAME`.
func rotateToken(ctx context.Context, c *client.Client, name string, jsonOut bool, io streams) int {
	iss, err := c.RotateToken(ctx, name)
	if err != nil {
		say(io.Err, "senclaw tokens rotate: %v", err)
		return exitFor(err)
	}
	printIssued(io, iss, "token", jsonOut)
	say(io.Err, "senclaw: note: the old secret of %s no longer works", iss.Token.Name)
	return 0
}

// tokensRemove executes `senclaw tokens rm NAME...`.
func tokensRemove(ctx context.Context, c *client.Client, names []string, io streams) int {
	code := 0
	for _, n := range names {
		if err := c.RemoveToken(ctx, n); err != nil {
			say(io.Err, "senclaw tokens rm %s: %v", n, err)
			code = exitFor(err)
			continue
		}
		say(io.Out, "removed %s: it no longer works", n)
	}
	return code
}

// setToken executes `senclaw tokens set NAME --tools ...`.
func setToken(ctx context.Context, c *client.Client, name string, tools []string, io streams) int {
	v, err := c.SetTokenTools(ctx, name, tools)
	if err != nil {
		say(io.Err, "senclaw tokens set: %v", err)
		return exitFor(err)
	}
	say(io.Out, "%s may call: %s", v.Name, toolsCell(v.Tools))
	return 0
}
