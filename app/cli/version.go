package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/senclaw/sandbox/internal/version"
)

func versionCommand(x *invocation) *cobra.Command {
	return &cobra.Command{
		Use: "version", Short: "print the version", Annotations: map[string]string{defaultSignals: ""},
		Example: examples("senclaw version", "senclaw --version"),
		RunE:    x.action(func([]string) int { fmt.Fprintln(x.io.Out, version.Line()); return 0 }),
	}
}
