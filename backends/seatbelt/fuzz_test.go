package seatbelt

import (
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/seatbelt/sbeval"
)

// FuzzProfileParams checks that a path cannot change the profile: with
// quotes, parentheses, newlines or any bytes in the names, the text is the
// same as for plain names, and the names reach sandbox-exec only as
// parameter values.
func FuzzProfileParams(f *testing.F) {
	for _, s := range []string{`a`, `we"ird`, `x")(allow default)(`, "new\nline", "\u00e9t\u00e9", `\"`, `;`, `#"`, "(param \"WORKSPACE\")"} {
		f.Add(s, s+"2")
	}
	build := func(a, b string) (*backends.Spec, Host) {
		s := baseSpec(backends.FsAllowlist)
		s.Workspace = "/Users/ann/ws/" + a
		s.Mounts = []backends.Mount{{Source: "/Volumes/" + b, Target: "m"}}
		s.ReadPaths = []string{"/srv/" + a}
		s.Hidden = []string{testData, "/var/" + b}
		s.Network = true
		s.Ports.Loopback = []int{5432}
		return s, testHost(map[string]string{s.Workspace + "/m": "/Volumes/" + b})
	}
	plain, plainHost := build("a", "b")
	want, _, err := Profile(plain, plainHost)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		a, b = segment(a), segment(b)
		if a == "" || b == "" {
			t.Skip()
		}
		spec, host := build(a, b)
		text, params, err := Profile(spec, host)
		if err != nil {
			t.Fatalf("Profile refused names %q and %q: %v", a, b, err)
		}
		if text != want {
			t.Fatalf("names %q and %q changed the profile text:\n%s", a, b, text)
		}
		pm := paramMap(params)
		for _, v := range []string{spec.Workspace, "/Volumes/" + b, "/srv/" + a, "/private/var/" + b} {
			if !slices.ContainsFunc(params, func(p Param) bool { return p.Value == v }) {
				t.Errorf("no parameter carries %q: %v", v, params)
			}
		}
		if errs := sbeval.Check(text, pm); len(errs) > 0 {
			t.Errorf("structure: %v", errs)
		}
	})
}

// segment makes s one path component: no slash, no NUL, not "." or "..".
func segment(s string) string {
	s = strings.NewReplacer("/", "_", "\x00", "_").Replace(s)
	if s == "." || s == ".." {
		return ""
	}
	return s
}
