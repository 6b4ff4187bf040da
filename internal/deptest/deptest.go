// Package deptest checks that a package does not depend on what it must not.
//
// A test names each forbidden package (or prefix of packages, ending in
// "/") with the reason, and Check fails it for every one that go list
// finds among the package's dependencies, for each GOOS asked.
package deptest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Checker is one package's forbidden dependencies.
type Checker struct {
	// Package is what go list is given ("." for the test's own).
	Package string
	// GOOS lists the systems to check for; none: this one.
	GOOS []string
	// Tags are build tags, comma-separated, for go list.
	Tags string
	// BadDeps maps a forbidden package, or a prefix ending in "/", to why
	// it is forbidden.
	BadDeps map[string]string
}

// Check fails t for each forbidden dependency of the package.
func (c Checker) Check(t *testing.T) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the go tool is not on PATH (CI=true)")
		}
		t.Skip("the go tool is not on PATH")
	}
	systems := c.GOOS
	if len(systems) == 0 {
		systems = []string{""}
	}
	for _, goos := range systems {
		cmd := exec.Command(goTool, "list", "-deps", "-tags="+c.Tags, c.Package)
		cmd.Env = os.Environ()
		if goos != "" {
			cmd.Env = append(cmd.Env, "GOOS="+goos)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s (GOOS=%s): %v", c.Package, goos, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for bad, why := range c.BadDeps {
				if dep == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad)) {
					t.Errorf("GOOS=%s: %s depends on %s, which it must not: %s", orHere(goos), c.Package, dep, why)
				}
			}
		}
	}
}

func orHere(goos string) string {
	if goos == "" {
		return "(this system)"
	}
	return goos
}
