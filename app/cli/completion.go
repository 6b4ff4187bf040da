package cli

import (
	"github.com/spf13/cobra"
)

// completionCommand is `senclaw completion SHELL`: cobra's scripts,
// written from the same command table the CLI parses with. They ask
// senclaw itself what completes (its hidden __complete command), so they
// follow every command, verb and flag.
func completionCommand(x *invocation) *cobra.Command {
	cmd := &cobra.Command{
		Use: "completion bash|zsh|fish|powershell", Short: "print a shell completion script (bash, zsh, fish or PowerShell)",
		Long: "Installed packages put these in place already; from a clone, load one into the running shell.",
		Example: examples(
			"source <(senclaw completion bash)",
			"senclaw completion fish > ~/.config/fish/completions/senclaw.fish",
		),
		RunE: verbs,
	}
	shell := func(name, install string, write func(*cobra.Command) error) *cobra.Command {
		return &cobra.Command{
			Use: name, Short: "print the " + name + " completion script",
			Example: examples("senclaw completion "+name+" > "+install, "source <(senclaw completion "+name+")"),
			RunE: x.action(func([]string) int {
				if err := write(cmd.Root()); err != nil {
					return ExitFailure
				}
				return 0
			}),
		}
	}
	cmd.AddCommand(
		shell("bash", "~/.local/share/bash-completion/completions/senclaw", func(r *cobra.Command) error { return r.GenBashCompletionV2(x.io.Out, true) }),
		shell("zsh", "\"${fpath[1]}/_senclaw\"", func(r *cobra.Command) error { return r.GenZshCompletion(x.io.Out) }),
		shell("fish", "~/.config/fish/completions/senclaw.fish", func(r *cobra.Command) error { return r.GenFishCompletion(x.io.Out, true) }),
		shell("powershell", "$PROFILE.CurrentUserAllHosts   # or: senclaw completion powershell | Out-String | Invoke-Expression", func(r *cobra.Command) error {
			return r.GenPowerShellCompletionWithDesc(x.io.Out)
		}),
	)
	return cmd
}
