package spaceapps

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/internal/testutil"
)

// procUID is the real uid of a live process, and its command.
func procUID(pid int) (uid int, comm string, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil || strings.Contains(string(data), "\nState:\tZ") {
		return 0, "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid, _ = strconv.Atoi(f[1])
		}
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Name:" {
			comm = f[1]
		}
	}
	return uid, comm, true
}

// TestAnUnsandboxedAppCannotReachASandbox: a Space App whose sandbox is
// off runs, under a root engine, as its own sandbox's uid (not root, not
// nobody, no other sandbox's): it can read neither a running sandbox's
// environment (/proc/PID/environ) nor its files through /proc/PID/root,
// and cannot plant json.py in a sandbox made ahead for the next one-shot.
func TestAnUnsandboxedAppCannotReachASandbox(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel()
	f := newFixture(t, func(o *app.Options, _ *Options) { o.AheadOneShots = 1 })
	ctx := context.Background()
	sb, err := f.e.Create(ctx, app.SandboxConfig{})
	must(t, err)
	notes := filepath.Join(sb.Workspace, "notes.txt")
	must(t, os.WriteFile(notes, []byte("private notes"), 0o600))
	must(t, os.Chown(notes, int(sb.UID), int(sb.GID)))
	bg, err := f.e.Exec(ctx, sb.ID, app.RunRequest{Command: "exec sleep 60", Background: true, Env: map[string]string{"API_KEY": "s3cret-key"}})
	must(t, err)
	defer f.e.KillRun(bg.Record.ID)
	pid := 0
	testutil.WaitFor(t, 10*time.Second, "the sandbox's sleep", func() bool {
		entries, _ := os.ReadDir("/proc")
		for _, ent := range entries {
			p, _ := strconv.Atoi(ent.Name())
			if uid, comm, ok := procUID(p); ok && comm == "sleep" && uid == int(sb.UID) {
				pid = p
			}
		}
		return pid != 0
	})
	made := ""
	testutil.WaitFor(t, 20*time.Second, "a sandbox made ahead", func() bool {
		entries, _ := os.ReadDir(filepath.Join(f.e.DataDir(), "workspaces"))
		for _, ent := range entries {
			if ent.Name() != sb.ID {
				made = filepath.Join(f.e.DataDir(), "workspaces", ent.Name())
			}
		}
		return made != ""
	})

	dir := writeApp(t, probeManifest("bare", `{"enabled": false}`), map[string]string{"probe.py": probeApp})
	f.register(t, dir, false)
	v := f.start(t, "bare")
	if v.Sandbox.Isolation != "none" {
		t.Fatalf("the app runs with isolation %q, not none", v.Sandbox.Isolation)
	}
	uid, _, _ := procUID(v.Pid)
	if uid == 0 || uid == 65534 || uid == int(sb.UID) {
		t.Fatalf("the unsandboxed app runs as uid %d (the sandbox's is %d)", uid, sb.UID)
	}
	proc := "/proc/" + strconv.Itoa(pid)
	for what, path := range map[string]string{
		"the sandbox's environment":        "/read?path=" + url.QueryEscape(proc+"/environ"),
		"its files through /proc/PID/root": "/read?path=" + url.QueryEscape(proc+"/root"+notes),
		"a module in a sandbox made ahead": "/write?path=" + url.QueryEscape(filepath.Join(made, "json.py")),
	} {
		if got := get(t, v.Port, path); !strings.HasPrefix(got, "error: ") || strings.Contains(got, "s3cret") || strings.Contains(got, "private") {
			t.Errorf("the unsandboxed app reached %s: %q", what, got)
		}
	}
	if _, err := os.Stat(filepath.Join(made, "json.py")); err == nil {
		t.Fatal("json.py was planted in the sandbox made ahead")
	}
}
