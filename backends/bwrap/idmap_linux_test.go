package bwrap

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestMain makes the test binary the idmap launcher when it is started as
// one, as main does for senclaw.
func TestMain(m *testing.M) { testutil.Main(m) }

// TestIDMappedMount: as root, a folder root owns (0755) bound read-write
// through an idmapped mount is the sandbox user's to write; what it
// writes belongs to root on the host, root's other files are its own
// too, anyone else's keep their "others" permissions, no file it makes
// can be setuid or setgid, and the mount is in no mount namespace of the
// host's.
func TestIDMappedMount(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("idmapped mounts are for a root engine: CI runs as root")
		}
		t.Skip("idmapped mounts are for a root engine")
	}
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			src := filepath.Join(d.base, "root-owned")
			must(t, os.Mkdir(src, 0o755))
			must(t, os.Chmod(src, 0o755))
			must(t, os.WriteFile(filepath.Join(src, "secret"), []byte("root's\n"), 0o600))
			must(t, os.WriteFile(filepath.Join(src, "others"), []byte("1234's\n"), 0o600))
			must(t, os.Chown(filepath.Join(src, "others"), 1234, 1234))
			mapDir := filepath.Join(d.base, "idmap")
			b := New(Options{Launcher: testutil.Launcher(t), IDMapDir: mapDir})
			spec := newSpec(t, u, d.ws)
			spec.Mounts = []backends.Mount{{Source: src, Target: "data", IDMap: true}}
			spec.Argv = []string{python, "-c", `import os, stat, time
open("data/new", "w").write("written\n")
print(open("data/secret").read().strip())
try:
    open("data/others").read()
    print("others: read")
except PermissionError:
    print("others: denied")
for what, f in [("chmod", lambda: os.chmod("data/new", 0o4755)), ("create", lambda: os.open("data/s", os.O_CREAT|os.O_WRONLY, 0o2755)), ("fchmod", lambda: os.fchmod(os.open("data/new", os.O_RDONLY), 0o6755))]:
    try:
        f()
        print(what, "setid: done")
    except PermissionError:
        print(what, "setid: refused")
os.chmod("data/new", 0o755)
print("plain chmod: done")
open("ready", "w").close()
time.sleep(2)`}
			var stdout, stderr testutil.SyncBuffer
			spec.Stdout, spec.Stderr = &stdout, &stderr
			p, err := b.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			deadline := time.Now().Add(30 * time.Second)
			for _, err := os.Stat(filepath.Join(d.ws, "ready")); err != nil && time.Now().Before(deadline); _, err = os.Stat(filepath.Join(d.ws, "ready")) {
				time.Sleep(20 * time.Millisecond)
			}
			// While it runs: the idmapped mount is nowhere on the host.
			info, _ := os.ReadFile("/proc/self/mountinfo")
			if strings.Contains(string(info), mapDir) {
				t.Errorf("the idmapped mount shows in the host's mount table:\n%s", info)
			}
			status, err := p.Wait()
			want := "root's\nothers: denied\nchmod setid: refused\ncreate setid: refused\nfchmod setid: refused\nplain chmod: done\n"
			if err != nil || status.Code != 0 || stdout.String() != want {
				t.Fatalf("got %q, want %q\nstatus %+v err %v\nstderr %s", stdout.String(), want, status, err, stderr.String())
			}
			for name, mode := range map[string]os.FileMode{"new": 0o755, "secret": 0o600, "others": 0o600} {
				fi, err := os.Stat(filepath.Join(src, name))
				if err != nil {
					t.Fatal(err)
				}
				st := fi.Sys().(*syscall.Stat_t)
				wantUID := uint32(0)
				if name == "others" {
					wantUID = 1234
				}
				if st.Uid != wantUID || st.Gid != wantUID || fi.Mode() != mode {
					t.Errorf("%s on the host: uid %d gid %d mode %v, want uid %d and %v", name, st.Uid, st.Gid, fi.Mode(), wantUID, mode)
				}
			}
			if _, err := os.Stat(filepath.Join(src, "s")); err == nil {
				t.Errorf("a setgid file was made")
			}
			if lines := strings.Join(p.Enforcement().Limits, "; "); !strings.Contains(lines, "mount data: writable through an idmapped mount, as its owner uid 0") {
				t.Errorf("the enforcement does not say so: %s", lines)
			}
		})
	}
	t.Run("refused_without_the_launcher", func(t *testing.T) {
		t.Parallel()
		u := sandboxUsers(t)[0]
		d := newTestDirs(t, u)
		spec := newSpec(t, u, d.ws, "true")
		spec.Mounts = []backends.Mount{{Source: d.outside, Target: "data", IDMap: true}}
		_, err := New(Options{}).Start(context.Background(), spec)
		if err == nil || !strings.Contains(err.Error(), "idmap launcher") {
			t.Fatalf("Start: %v", err)
		}
	})
}
