package bwrap

import (
	"fmt"
	"path"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// validate checks what Args relies on. Anything ambiguous is an error: the
// run is refused rather than guessed at.
func validate(spec *backends.Spec) error {
	if !spec.FsMode.Valid() {
		return fmt.Errorf("invalid fs mode %q", spec.FsMode)
	}
	if err := absClean("workspace", spec.Workspace); err != nil {
		return err
	}
	if spec.Workspace == "/" {
		return fmt.Errorf("invalid workspace %q: the root cannot be the workspace", spec.Workspace)
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return fmt.Errorf("invalid argv %q: empty command", spec.Argv)
	}
	for _, p := range spec.ReadPaths {
		if err := absClean("read path", p); err != nil {
			return err
		}
	}
	for _, p := range spec.Hidden {
		if err := absClean("hidden path", p); err != nil {
			return err
		}
	}
	for _, m := range spec.Mounts {
		if err := absClean("mount source", m.Source); err != nil {
			return err
		}
		t := m.Target
		if t == "" || path.IsAbs(t) || path.Clean(t) != t || t == ".." || strings.HasPrefix(t, "../") {
			return fmt.Errorf("invalid mount target %q: must be a clean path inside the workspace", t)
		}
	}
	if n := spec.Net; n != nil {
		if err := absClean("network directory", n.Dir); err != nil {
			return err
		}
		if err := absClean("forwarder", n.Forwarder); err != nil {
			return err
		}
	}
	if g := spec.UnixGuard; g != nil {
		if err := absClean("forwarder", g.Forwarder); err != nil {
			return err
		}
		for _, p := range g.Sockets {
			if err := absClean("allowed socket", p); err != nil {
				return err
			}
		}
	}
	if spec.RunID != "" && !validRunID(spec.RunID) {
		return fmt.Errorf("invalid run id %q", spec.RunID)
	}
	return nil
}

// validRunID keeps run ids safe to use as a cgroup directory name: letters,
// digits, '.', '_' and '-', not starting with '.'.
func validRunID(id string) bool {
	if len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '.' || r == '_' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}

func absClean(what, p string) error {
	if p == "" || !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("invalid %s %q: must be an absolute, clean path", what, p)
	}
	return nil
}
