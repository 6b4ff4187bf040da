package bwrap

import (
	"fmt"
	"path"
	"strings"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
)

// validate checks what Args relies on. Anything ambiguous is an error: the
// run is refused rather than guessed at.
func validate(spec *backends.Spec) error {
	if err := backends.ValidateSpec(spec); err != nil {
		return err
	}
	if n := spec.Net; n != nil && (n.Forwarder == "" || !path.IsAbs(n.Forwarder) || path.Clean(n.Forwarder) != n.Forwarder) {
		return fmt.Errorf("invalid forwarder %q: must be an absolute, clean path", n.Forwarder)
	}
	if g := spec.UnixGuard; g != nil {
		if g.Forwarder == "" || !path.IsAbs(g.Forwarder) || path.Clean(g.Forwarder) != g.Forwarder {
			return fmt.Errorf("invalid forwarder %q: must be an absolute, clean path", g.Forwarder)
		}
		for _, p := range g.Sockets {
			if p == "" || !path.IsAbs(p) || path.Clean(p) != p {
				return fmt.Errorf("invalid allowed socket %q: must be an absolute, clean path", p)
			}
		}
	}
	for _, c := range spec.Caches {
		if !path.IsAbs(c.Source) || path.Clean(c.Source) != c.Source || path.Clean(c.Target) != c.Target || !strings.HasPrefix(c.Target, "/tmp/") || c.ReadOnly {
			return fmt.Errorf("invalid cache %q at %q: an absolute, clean folder bound read-write under /tmp", c.Source, c.Target)
		}
	}
	if spec.RunID != "" && !limits.ValidName(spec.RunID) {
		return fmt.Errorf("invalid run id %q", spec.RunID)
	}
	if spec.SandboxID != "" && !limits.ValidName(spec.SandboxID) {
		return fmt.Errorf("invalid sandbox id %q", spec.SandboxID)
	}
	return nil
}
