package desktop

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// guiImports are the packages only this package may import.
var guiImports = []string{"github.com/wailsapp/", "fyne.io/systray"}

const self = "github.com/senclaw/sandbox/app/desktop"

// goList runs `go list` at the module root with args, one line per package.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the go tool is not on PATH (CI=true)")
		}
		t.Skip("the go tool is not on PATH")
	}
	cmd := exec.Command(goTool, append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// guiDeps returns the GUI packages among deps.
func guiDeps(deps []string) []string {
	var bad []string
	for _, d := range deps {
		for _, g := range guiImports {
			if strings.HasPrefix(d, g) {
				bad = append(bad, d)
			}
		}
	}
	return bad
}

// TestOnlyDesktopImportsGUI keeps Wails and systray out of every package
// but this one (and its own tests), and out of the headless binary, like
// Tailscale's tstest/deptest: the engine stays headless and `senclaw
// serve` builds with CGO off.
func TestOnlyDesktopImportsGUI(t *testing.T) {
	t.Parallel()
	// Every package (and its tests) with its transitive dependencies.
	for _, line := range goList(t, "-test", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./...") {
		pkg, deps, _ := strings.Cut(line, " ")
		if pkg == self || strings.HasPrefix(pkg, self+" ") || strings.HasPrefix(pkg, self+".test") || strings.HasPrefix(pkg, self+"/") {
			continue
		}
		if bad := guiDeps(strings.Fields(deps)); len(bad) > 0 {
			t.Errorf("%s depends on %v: only %s may import Wails or systray", pkg, bad, self)
		}
	}
	// The headless binary: main without the desktop tag.
	if bad := guiDeps(goList(t, "-deps", ".")); len(bad) > 0 {
		t.Errorf("the headless build of senclaw depends on %v", bad)
	}
	// And the check has teeth: the desktop build does pull them in.
	if bad := guiDeps(goList(t, "-deps", "-tags", "desktop,production,webkit2_41", ".")); len(bad) == 0 {
		t.Error("the desktop build has no GUI dependency: this test no longer checks anything")
	}
}
