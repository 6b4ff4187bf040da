package docker

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// pathMap translates host paths the engine puts into a Spec (the workspace,
// mount sources) into the container's view (/work, /work/<target>).
type pathMap struct {
	// pairs are host prefix -> container path, longest host prefix first
	// so that a mount inside the workspace wins over the workspace.
	pairs [][2]string
}

func newPathMap(s shape) pathMap {
	var m pathMap
	m.pairs = append(m.pairs, [2]string{s.Workspace, workDir})
	for _, mt := range s.Mounts {
		m.pairs = append(m.pairs, [2]string{mt.Source, path.Join(workDir, mt.Target)})
	}
	slices.SortStableFunc(m.pairs, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	return m
}

// translate maps p when it is one of the host prefixes or below one.
func (m pathMap) translate(p string) string {
	for _, pr := range m.pairs {
		host := filepath.ToSlash(pr[0])
		if p == host {
			return pr[1]
		}
		if rest, ok := strings.CutPrefix(p, host+"/"); ok {
			return pr[1] + "/" + rest
		}
	}
	return p
}

// argv maps each argument that is a host path under the workspace or a
// mount (the engine passes code files as absolute host paths).
func (m pathMap) argv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = m.translate(a)
	}
	return out
}

// env maps values that are host paths: HOME becomes /work and TMPDIR
// /work/.tmp as the engine set them to the host workspace and its .tmp.
func (m pathMap) env(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			kv = k + "=" + m.translate(v)
		}
		out = append(out, kv)
	}
	return out
}

// notEnforced lists what spec asks for that a container does not do, in
// words for the run record.
func notEnforced(spec *backends.Spec) []string {
	var missing []string
	if spec.FsMode != "" && spec.FsMode != backends.FsStrict {
		missing = append(missing, "fs mode "+string(spec.FsMode)+" does not apply: a container sees only its image, the workspace and the mounts")
	}
	if len(spec.ReadPaths) > 0 {
		missing = append(missing, "read paths are not exposed in a container (only the workspace and mounts are)")
	}
	return missing
}
