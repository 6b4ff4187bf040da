package landlock

import (
	"fmt"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
)

// validate checks what Start relies on; anything ambiguous refuses the run.
func validate(spec *backends.Spec) error {
	if err := backends.ValidateSpec(spec); err != nil {
		return err
	}
	if spec.RunID != "" && !limits.ValidName(spec.RunID) {
		return fmt.Errorf("invalid run id %q", spec.RunID)
	}
	if spec.SandboxID != "" && !limits.ValidName(spec.SandboxID) {
		return fmt.Errorf("invalid sandbox id %q", spec.SandboxID)
	}
	return nil
}
