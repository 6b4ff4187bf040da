package cli

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/mcpconfig"
)

func mcpConfigCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp-config [--write [--file PATH] [--yes]] [" + strings.Join(mcpconfig.Clients, "|") + "]",
		Short: "print (or --write) an MCP client's configuration for this engine",
		Long: "Prints the mcpServers entries for the client (generic when none is named): senclaw sandbox-server over stdio and, where the client " +
			"takes it, the engine's Streamable HTTP server at /mcp of the address the running engine really listens on (read from its checked " +
			"info file, never assumed to be 7878: see senclaw serve -h), both with an agent token made for that client (mcp:CLIENT, as senclaw tokens add " +
			"makes; a second run gives it a new secret), never the owner's API token: an agent may do what the tools do inside the policy, never change it. " +
			"--tenant makes it a token of that tenant. --write puts them into the client's own file " +
			"(claude-desktop: ~/.config/Claude/claude_desktop_config.json, claude-code: ~/.claude.json, cursor: ~/.cursor/mcp.json, or --file) " +
			"keeping its other content, as senclaw integrate does; a file that gets the token is made 0600.",
		Example: examples("senclaw mcp-config claude-code", "senclaw mcp-config --write cursor", "senclaw mcp-config --tenant alice generic"),
	}
	write := cmd.Flags().Bool("write", false, "write the configuration into the client's file, keeping its other content")
	file := cmd.Flags().String("file", "", "the configuration `PATH` to write (default: the client's own file)")
	yes := cmd.Flags().Bool("yes", false, "do not ask before writing (asked only on a terminal)")
	tenant := cmd.Flags().String("tenant", "", "make the client's token one of tenant `NAME` (senclaw tenants ls)")
	cmd.RunE = x.action(func(args []string) int {
		name := "generic"
		switch len(args) {
		case 0:
		case 1:
			name = args[0]
		default:
			fmt.Fprintf(x.io.Err, "senclaw mcp-config: give one client (%s), got %q\n", strings.Join(mcpconfig.Clients, ", "), args)
			return ExitUsage
		}
		if *file != "" && !*write {
			fmt.Fprintln(x.io.Err, "senclaw mcp-config: --file goes with --write")
			return ExitUsage
		}
		if _, _, err := mcpconfig.Servers(name, mcpconfig.Endpoint{}); err != nil {
			fmt.Fprintln(x.io.Err, "senclaw mcp-config:", err)
			return ExitUsage
		}
		return x.withClient(func(c *client.Client) int {
			d, _ := x.dirs()
			info, err := client.ReadDaemonInfo(d.Runtime)
			if err != nil {
				fmt.Fprintln(x.io.Err, "senclaw mcp-config: reading the engine's info file:", err)
				return ExitFailure
			}
			e := mcpconfig.Endpoint{Senclaw: x.cliPath(), URL: info.URL}
			known := ""
			if *write {
				t := agentshell.Target{Path: *file}
				if t.Path == "" {
					t, _ = mcpconfig.Target(name, d.Home, x.getenv("XDG_CONFIG_HOME"))
				}
				known = mcpconfig.KnownToken(t)
			}
			tok, note, err := mcpToken(x.ctx, c, name, *tenant, known)
			if err != nil {
				fmt.Fprintln(x.io.Err, "senclaw mcp-config:", err)
				return exitFor(err)
			}
			e.Token = tok
			o := mcpConfigOptions{Client: name, Endpoint: e, Write: *write, File: *file, Home: d.Home, ConfigHome: x.getenv("XDG_CONFIG_HOME"), TokenNote: note}
			if *write && !*yes && isTerminal(x.env.Stdin) {
				o.Confirm = askYes(x.env.Stdin, x.io.Out)
			}
			return mcpConfig(o, x.io)
		})
	})
	return cmd
}

// mcpConfigOptions are what `senclaw mcp-config CLIENT` is given.
type mcpConfigOptions struct {
	Client   string
	Endpoint mcpconfig.Endpoint
	// Write puts the configuration into the client's file (File, or the
	// client's own in Home), keeping the file's other content.
	Write            bool
	File             string
	Home, ConfigHome string
	// Confirm, when set, asks before writing (an interactive caller).
	Confirm func(question string) bool
	// TokenNote says what making the client's agent token did (a token
	// of that name got a new secret).
	TokenNote string
}

// mcpConfig executes `senclaw mcp-config`: it prints the client's
// configuration for this engine or, with Write, shows the change to the
// client's file and makes it.
func mcpConfig(o mcpConfigOptions, io streams) int {
	servers, notes, err := mcpconfig.Servers(o.Client, o.Endpoint)
	if err != nil {
		say(io.Err, "senclaw mcp-config: %v", err)
		return ExitUsage
	}
	for _, n := range notes {
		say(io.Err, "senclaw: note: %s", n)
	}
	if o.TokenNote != "" {
		say(io.Err, "senclaw: note: %s", o.TokenNote)
	}
	if !o.Write {
		_, _ = io.Out.Write(mcpconfig.Document(servers))
		return 0
	}
	t := agentshell.Target{Agent: o.Client, Scope: "user", Path: o.File}
	if o.File == "" {
		if t, err = mcpconfig.Target(o.Client, o.Home, o.ConfigHome); err != nil {
			say(io.Err, "senclaw mcp-config: %v", err)
			return ExitUsage
		}
	}
	c, err := mcpconfig.Plan(t, servers)
	if err != nil {
		say(io.Err, "senclaw mcp-config: %v", err)
		return ExitFailure
	}
	if !c.Changed() {
		say(io.Out, "%s already has this configuration; nothing to change", t.Path)
		return 0
	}
	say(io.Out, "To configure %s for this engine, senclaw changes %s:", o.Client, t.Path)
	// The token is not shown: the screen may be shared, or recorded.
	hide := func(b []byte) []byte {
		if o.Endpoint.Token == "" || b == nil {
			return b
		}
		return bytes.ReplaceAll(b, []byte(o.Endpoint.Token), []byte("<the agent token of "+o.Client+">"))
	}
	writeDiff(io.Out, hide(c.Before), hide(c.After))
	for _, n := range c.Notes {
		say(io.Out, "note: %s", n)
	}
	if o.Confirm != nil && !o.Confirm("Write it?") {
		say(io.Out, "Nothing was written.")
		return ExitFailure
	}
	if err := agentshell.Apply(c); err != nil {
		say(io.Err, "senclaw mcp-config: %v", err)
		return ExitFailure
	}
	say(io.Out, "Written. Restart %s to use it.", o.Client)
	return 0
}
