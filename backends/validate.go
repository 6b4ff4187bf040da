package backends

import (
	"fmt"
	"path"
	"strings"
)

// ValidateSpec checks what every backend that starts host processes
// relies on. Anything ambiguous is an error: the run is refused rather
// than guessed at.
func ValidateSpec(spec *Spec) error {
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
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("invalid environment entry %q: must be NAME=value", kv)
		}
	}
	for _, list := range []struct {
		what  string
		paths []string
	}{{"read path", spec.ReadPaths}, {"hidden path", spec.Hidden}, {"masked path", spec.Masked}} {
		for _, p := range list.paths {
			if err := absClean(list.what, p); err != nil {
				return err
			}
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
	for _, p := range spec.Protected {
		if err := absClean("protected path", p); err != nil {
			return err
		}
		if _, _, ok := ProtectedIn(spec, p); !ok {
			return fmt.Errorf("invalid protected path %q: must lie inside the workspace or a read-write mount source", p)
		}
	}
	if n := spec.Net; n != nil {
		if err := absClean("network directory", n.Dir); err != nil {
			return err
		}
	}
	return nil
}

func absClean(what, p string) error {
	if p == "" || !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("invalid %s %q: must be an absolute, clean path", what, p)
	}
	return nil
}

// ProtectedIn says where the protected path p (spec.Protected) lies: in
// the workspace (mount -1) or in the read-write mount spec.Mounts[mount]
// (the innermost one that holds it), and its path rel there.
func ProtectedIn(spec *Spec, p string) (mount int, rel string, ok bool) {
	inside := func(root string) (string, bool) {
		return strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/")
	}
	mount, best := -1, ""
	for i, m := range spec.Mounts {
		if r, in := inside(m.Source); in && !m.ReadOnly && len(m.Source) > len(best) {
			mount, rel, best = i, r, m.Source
		}
	}
	if mount >= 0 {
		return mount, rel, true
	}
	rel, ok = inside(spec.Workspace)
	return -1, rel, ok
}
