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
// but this one (and its own), like Tailscale's tstest/deptest: others
// reach the tray and the window through it. senclaw, the CLI, links
// neither; senclaw-engine has the tray (D-Bus, no cgo) and not Wails,
// which only senclaw-window links, so that the engine builds with CGO
// off and never loads GTK.
func TestOnlyDesktopImportsGUI(t *testing.T) {
	t.Parallel()
	// Every package (and its tests) with its own imports.
	for _, line := range goList(t, "-test", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		pkg, imports, _ := strings.Cut(line, " ")
		if pkg == self || strings.HasPrefix(pkg, self+" ") || strings.HasPrefix(pkg, self+".test") || strings.HasPrefix(pkg, self+"/") || strings.HasPrefix(pkg, self+"_test") {
			continue
		}
		if bad := guiDeps(strings.Fields(imports)); len(bad) > 0 {
			t.Errorf("%s imports %v: only %s may import Wails or systray", pkg, bad, self)
		}
	}
	if bad := guiDeps(goList(t, "-deps", ".")); len(bad) > 0 {
		t.Errorf("senclaw, the CLI, depends on %v", bad)
	}
	for _, d := range goList(t, "-deps", "./app/daemon/cmd/senclaw-engine") {
		if strings.HasPrefix(d, "github.com/wailsapp/") {
			t.Errorf("senclaw-engine depends on %s: the window is senclaw-window's", d)
		}
	}
	// And the check has teeth: the window's build does pull Wails in.
	if bad := guiDeps(goList(t, "-deps", "-tags", "desktop,production,webkit2_41", "./app/desktop/cmd/senclaw-window")); len(bad) == 0 {
		t.Error("senclaw-window's build has no GUI dependency: this test no longer checks anything")
	}
}
