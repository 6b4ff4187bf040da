package app

import (
	"path"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// FuzzResolve checks that no path a caller can send maps outside the
// sandbox's workspace or its mounts: the name below the chosen root is
// always clean and relative, without "..".
func FuzzResolve(f *testing.F) {
	for _, seed := range []string{"", ".", "/", "a/b", "../x", "a/../../x", "/ws/a", "m/x", "m/../../x", "m", "./m/./y", "a//b/", "\x00", "ws/../m", "....//x", "m/.."} {
		f.Add(seed)
	}
	sb := &Sandbox{Workspace: "/ws", Mounts: []backends.Mount{{Source: "/src/m", Target: "m", ReadOnly: true}, {Source: "/src/deep", Target: "d/e"}}}
	f.Fuzz(func(t *testing.T, p string) {
		j, err := resolve(sb, p)
		if err != nil {
			return
		}
		if j.root != "/ws" && j.root != "/src/m" && j.root != "/src/deep" {
			t.Fatalf("%q resolved to root %q", p, j.root)
		}
		if j.name != "." && (path.IsAbs(j.name) || path.Clean(j.name) != j.name) {
			t.Fatalf("%q resolved to name %q", p, j.name)
		}
		for _, part := range strings.Split(j.name, "/") {
			if part == ".." {
				t.Fatalf("%q resolved to name %q with ..", p, j.name)
			}
		}
		if j.root == "/src/m" && !j.readOnly {
			t.Fatalf("%q lost the read-only flag", p)
		}
	})
}
