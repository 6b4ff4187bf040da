package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/app/agentshell"
	"github.com/senclaw/sandbox/app/client"
)

func hookCommand(x *invocation) *cobra.Command {
	verb := func(agent, env, tool string) *cobra.Command {
		event := map[string]string{agentshell.ClaudeCode: "PreToolUse", agentshell.GeminiCLI: "BeforeTool"}[agent]
		return &cobra.Command{
			Use: agent + " < HOOK_JSON", Short: "the " + agent + " hook: route its " + tool + " tool through agent-shell",
			Long: "Reads the hook's JSON on stdin and prints the answer: the tool's command rewritten to run through senclaw agent-shell -c " +
				"in the session's project (" + env + " when the cwd lies in it, else the cwd), the original kept byte for byte; or a denial " +
				"with the reason when the agent shell would refuse it or the engine cannot be reached. Other tools pass untouched.",
			Example: examples(
				`echo '{"hook_event_name":"`+event+`","cwd":"'$PWD'","tool_name":"`+tool+`","tool_input":{"command":"ls"}}' | senclaw hook `+agent,
				"senclaw integrate "+agent+"   # installs it",
			),
			RunE: x.action(func(args []string) int {
				if len(args) > 0 {
					fmt.Fprintf(x.io.Err, "senclaw hook %s: it takes no arguments, got %q (the hook's JSON comes on stdin)\n", agent, args)
					return ExitUsage
				}
				self := selfPath()
				if self == "" {
					fmt.Fprintln(x.io.Err, "senclaw hook: cannot find this senclaw executable's path")
					return ExitFailure
				}
				connect := func(ctx context.Context) (*client.Client, error) {
					d, err := x.dirs()
					if err != nil {
						return nil, err
					}
					c, err := x.connect(ctx, d, io.Discard)
					if err != nil {
						return nil, err
					}
					// The hook is the agent's, as the command it rewrites
					// is: the agent shell's token of that agent.
					return x.asAgent(c, "agent-shell:"+agent, "")
				}
				return hook(x.ctx, hookOptions{Agent: agent, ProjectDir: x.getenv(env), Senclaw: self, Connect: connect, Stdin: x.env.Stdin, IO: x.io})
			}),
		}
	}
	cmd := &cobra.Command{
		Use: "hook claude-code|gemini-cli < HOOK_JSON", Short: "the hooks agents call before a shell command (installed by senclaw integrate)",
		Long:    "Agents run these, not people: senclaw integrate puts them in the agents' settings. They are listed so that you can see what an integration installs.",
		Example: examples("senclaw hook claude-code -h", "senclaw integrate claude-code --dry-run"),
		RunE:    verbs,
	}
	cmd.AddCommand(
		verb(agentshell.ClaudeCode, "CLAUDE_PROJECT_DIR", "Bash"),
		verb(agentshell.GeminiCLI, "GEMINI_PROJECT_DIR", "run_shell_command"),
	)
	return cmd
}

// hookOptions are what `senclaw hook AGENT` is given.
type hookOptions struct {
	Agent string
	// ProjectDir is the agent's project root from its environment.
	ProjectDir string
	// Senclaw is this binary's absolute path.
	Senclaw string
	// Connect reaches the daemon (starting one when none answers).
	Connect func(ctx context.Context) (*client.Client, error)
	Stdin   io.Reader
	IO      streams
}

// hook executes `senclaw hook AGENT`: it reads the hook's JSON on stdin
// and prints the agent's answer, rewriting the shell tool's command to
// run through the agent shell, or denying it with the reason when the
// agent shell would refuse it or the engine cannot be reached. It exits
// 0 whenever it answered (the answer says allow or deny).
func hook(ctx context.Context, o hookOptions) int {
	input, err := io.ReadAll(io.LimitReader(o.Stdin, agentshell.MaxHookInput))
	if err != nil {
		fmt.Fprintln(o.IO.Err, "senclaw hook:", err)
		return ExitFailure
	}
	check := func(ctx context.Context, dir string) (string, error) {
		c, err := o.Connect(ctx)
		if err != nil {
			return "", fmt.Errorf("%w (%v)", agentshell.ErrUnreachable, err)
		}
		iso, err := c.AgentShellCheck(ctx, dir)
		if client.IsUnavailable(err) {
			return "", fmt.Errorf("%w (%v)", agentshell.ErrUnreachable, err)
		}
		return iso, err
	}
	out, err := agentshell.Hook(ctx, agentshell.HookRequest{Agent: o.Agent, Input: input, ProjectDir: o.ProjectDir, Senclaw: o.Senclaw, Check: check})
	if err != nil {
		fmt.Fprintln(o.IO.Err, "senclaw hook:", err)
		return ExitUsage
	}
	if out != nil {
		fmt.Fprintln(o.IO.Out, string(out))
	}
	return 0
}
