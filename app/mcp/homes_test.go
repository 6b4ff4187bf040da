package mcp_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// An agent asking sbx_create for a read-write mount of another person's
// home, or of a folder of it from which programs run code at login or
// from PATH, is refused with the reason; a folder of its own in that
// home is not refused for being there.
func TestSbxCreateRefusesAnotherHomesLoginPlaces(t *testing.T) {
	cs := connect(t, startDaemon(t))
	for _, u := range []testutil.OtherUser{testutil.SecondUser(t), testutil.LocalUser(t, "senclaw-third")} {
		places := []string{".config", ".config/autostart", ".config/systemd/user", ".config/environment.d", ".local/bin", ".local/share/applications", "bin", ".ssh", ".gnupg", ".kube", ".docker", ".local"}
		// What is made here goes when the test ends, innermost first,
		// each folder only if empty (another test's stays).
		args := []string{"-p"}
		var made []string
		for _, p := range append([]string{"work"}, places...) {
			args = append(args, filepath.Join(u.Home, p))
			dir := u.Home
			for _, part := range strings.Split(p, "/") {
				if dir = filepath.Join(dir, part); !exists(dir) && !slices.Contains(made, dir) {
					made = append(made, dir)
				}
			}
		}
		slices.SortFunc(made, func(a, b string) int { return len(b) - len(a) })
		t.Cleanup(func() {
			for _, d := range made {
				os.Remove(d)
			}
		})
		u.Run(t, "mkdir", args...)
		// The sandbox user may write them (as it may through an idmapped
		// mount): only the guard stands in the way.
		open := []string{filepath.Join(u.Home, "work")}
		for _, p := range places {
			if p != ".ssh" && p != ".gnupg" {
				open = append(open, filepath.Join(u.Home, p))
			}
		}
		u.Run(t, "chmod", append([]string{"0777"}, open...)...)
		t.Cleanup(func() { u.Run(t, "chmod", append([]string{"0755"}, open...)...) })
		for _, p := range append([]string{""}, places...) {
			src := filepath.Join(u.Home, p)
			text := fails(t, cs, "sbx_create", map[string]any{"backend": "bwrap", "mounts": []map[string]any{{"source": src, "target": "m"}}}, src)
			if !slices.ContainsFunc([]string{"at login or from PATH", "home directory", "secret folder", "holds"}, func(r string) bool { return strings.Contains(text, r) }) {
				t.Errorf("sbx_create with %s read-write: refused for another reason: %s", src, text)
			}
		}
		ok(t, cs, "sbx_create", map[string]any{"backend": "bwrap", "mounts": []map[string]any{{"source": filepath.Join(u.Home, "work"), "target": "m"}}})
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
