package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// A root engine's sandbox in open mode reads the whole disk, and so
// whatever another person left readable: their secret folders are
// masked in every home, as the engine user's own are, and their runtime
// dirs too, on every backend with an open mode (Docker has none: a
// container sees its image).
func TestOpenModeHidesEveryonesSecrets(t *testing.T) {
	testutil.RequireRoot(t)
	other := testutil.SecondUser(t)
	// A key left readable (a careless umask, a copied .pub's mode): the
	// kernel would let anyone read it.
	ssh := filepath.Join(other.Home, ".ssh")
	if _, err := os.Lstat(ssh); err != nil {
		t.Cleanup(func() { os.Remove(ssh) }) // after the key's removal
	}
	other.Run(t, "mkdir", "-p", ssh)
	other.Run(t, "chmod", "0755", other.Home, ssh)
	key := filepath.Join(ssh, "id_ed25519")
	other.Run(t, "sh", "-c", "echo OTHER-PRIVATE-KEY > "+key+" && chmod 0644 "+key)
	t.Cleanup(func() {
		os.Remove(key)
		os.Chmod(ssh, 0o700)
	})
	runtime := filepath.Join("/run/user", strconv.Itoa(other.UID))
	if _, err := os.Stat(runtime); err != nil {
		must(t, os.MkdirAll(runtime, 0o755))
		must(t, os.Chown(runtime, other.UID, other.GID))
		t.Cleanup(func() { os.RemoveAll(runtime) })
	}
	other.Run(t, "chmod", "0755", runtime)
	secret := filepath.Join(runtime, "senclaw-test-secret")
	other.Run(t, "sh", "-c", "echo OTHER-RUNTIME-SECRET > "+secret+" && chmod 0644 "+secret)
	t.Cleanup(func() { os.Remove(secret) })
	for name, e := range map[string]func(*testing.T) *Engine{
		"bwrap":    func(t *testing.T) *Engine { return bwrapEngine(t) },
		"landlock": func(t *testing.T) *Engine { return landlockEngine(t) },
	} {
		t.Run(name, func(t *testing.T) {
			e := e(t)
			res, err := e.RunOnce(context.Background(), SandboxConfig{Backend: ptr(name), FsMode: ptr("open")},
				RunRequest{Command: "cat " + key + " " + secret + "; ls " + ssh + " " + runtime + "; cat /etc/hostname >/dev/null && echo done"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Record.Isolation != name {
				t.Fatalf("isolation %q", res.Record.Isolation)
			}
			for _, leak := range []string{"OTHER-PRIVATE-KEY", "OTHER-RUNTIME-SECRET", "id_ed25519", "senclaw-test-secret"} {
				if strings.Contains(res.Stdout, leak) {
					t.Errorf("%s's open mode showed %s:\n%s", name, leak, res.Stdout)
				}
			}
			if !strings.HasSuffix(res.Stdout, "done\n") {
				t.Errorf("open mode did not read the disk: %q %q", res.Stdout, res.Stderr)
			}
		})
	}
}

// TestBenchOpenModeMasksOfOtherHomes measures, in one run, what masking
// the other homes' secret folders costs a one-shot in open mode: the
// median of `true` on an engine that knows this machine's homes against
// one whose passwd file is empty, in alternate turns, per backend. The
// second and third users get the secret folders of a busy desktop, with
// the modes the tools give them (SENCLAW_BENCH_MODE=0755 leaves them all
// readable: the worst case). Run it with SENCLAW_BENCH=1.
func TestBenchOpenModeMasksOfOtherHomes(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1")
	}
	folders := map[string]string{".ssh": "0700", ".gnupg": "0700", ".aws": "0755", ".docker": "0700", ".kube": "0750",
		".mozilla": "0700", ".config/google-chrome": "0700", ".local/share/keyrings": "0700", ".password-store": "0700", ".local/share/senclaw": "0700"}
	for _, u := range []testutil.OtherUser{testutil.SecondUser(t), testutil.LocalUser(t, "senclaw-third")} {
		u.Run(t, "chmod", "0755", u.Home)
		for d, mode := range folders {
			if m := os.Getenv("SENCLAW_BENCH_MODE"); m != "" {
				mode = m
			}
			p := filepath.Join(u.Home, d)
			if _, err := os.Lstat(p); err == nil {
				continue // someone's: left as it is
			}
			removeLater(t, u.Home, []string{d})
			u.Run(t, "mkdir", "-p", p)
			u.Run(t, "chmod", mode, p)
		}
	}
	empty := filepath.Join(t.TempDir(), "passwd")
	must(t, os.WriteFile(empty, nil, 0o644))
	noHomes := func(o *Options) { o.PasswdFile = empty }
	for _, backend := range []string{"bwrap", "landlock"} {
		engines := map[string]*Engine{"every home": bwrapEngine(t), "no other home": bwrapEngine(t, noHomes)}
		if backend == "landlock" {
			engines = map[string]*Engine{"every home": landlockEngine(t), "no other home": landlockEngine(t, noHomes)}
		}
		times := map[string][]time.Duration{}
		for i := range 81 {
			for name, e := range engines {
				start := time.Now()
				res, err := e.RunOnce(context.Background(), SandboxConfig{Backend: ptr(backend), FsMode: ptr("open")}, RunRequest{Argv: []string{"true"}})
				if err != nil || !res.Record.OK() {
					t.Fatal(err, res.Record)
				}
				if i > 0 {
					times[name] = append(times[name], time.Since(start))
				}
			}
		}
		for name, e := range engines {
			d := times[name]
			slices.Sort(d)
			t.Logf("%s, %s (%d masks): median %v, p10 %v, p90 %v", backend, name, len(e.paths.hidden(e.UnownedUser())), d[len(d)/2], d[len(d)/10], d[len(d)*9/10])
		}
	}
}
