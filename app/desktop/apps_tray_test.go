//go:build linux

package desktop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/spaceapps"
	"github.com/senclaw/sandbox/assets"
	"github.com/senclaw/sandbox/internal/testutil"
)

// quickClock waits no time for the supervisor's backoff (so an app gives
// up at once) but keeps the probe interval real (no busy probing).
type quickClock struct{}

func (quickClock) Now() time.Time { return time.Now() }
func (quickClock) After(d time.Duration) <-chan time.Time {
	if d == spaceapps.ProbeEvery {
		return time.After(d)
	}
	return time.After(time.Millisecond)
}

// appsDaemon is testDaemon with Space Apps: an engine (direct backend
// only), its supervisor and its API on a Unix socket.
func appsDaemon(t *testing.T) (*client.Client, string) {
	t.Helper()
	root := testRoot(t)
	if err := os.MkdirAll(filepath.Join(root, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	e := testEngine(t, root)
	apps, err := spaceapps.New(spaceapps.Options{Engine: e, Clock: quickClock{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(apps.Close)
	return serveAPI(t, root, api.Options{Engine: e, Apps: apps})
}

// TestSpaceAppsAttentionOverDBus: on the tray's private bus, an app that
// comes to need a restart (its sandbox enabled while it runs without one)
// turns the icon to attention, names itself in the tooltip and the Space
// Apps menu item, and sends one notification with the reason and its
// name escaped; an app that gives up sends another. The menu item opens
// the dashboard at the Space Apps card.
func TestSpaceAppsAttentionOverDBus(t *testing.T) {
	addr := startBus(t)
	conn := connect(t, addr)
	watcher := serveWatcher(t, conn)
	notes := serveNotifications(t, conn)
	notes.mu.Lock()
	notes.markup = true
	notes.mu.Unlock()
	c, sock := appsDaemon(t)
	ctx := callCtx(t)

	dir := testutil.SandboxDir(t, "sapp-tray-")
	if err := os.Chmod(dir, 0o755); err != nil { // copied as the sandbox user
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "senclaw-app.json"), []byte(`{"id": "notes", "name": "Notes <b>&</b>", "runtime": {"start": "exec python3 -m http.server --bind 127.0.0.1 $PORT", "healthPath": "/"}, "sandbox": {"enabled": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterApp(ctx, spaceapps.RegisterRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.StartApp(ctx, "notes", true); err != nil || !r.OK || r.App.Sandbox.Isolation != "none" {
		t.Fatalf("start: %+v %v", r, err)
	}
	tc := startTrayProc(t, sock, addr)
	sender := tc.register(t, watcher)
	testutil.WaitFor(t, 10*time.Second, "the menu with the Space Apps item", func() bool {
		for _, it := range menuOf(t, conn, sender) {
			if it.label == "Space Apps" {
				return true
			}
		}
		return false
	})

	// What is so when the tray first looks is shown, not told: the app
	// must come to need a restart after that look (the tooltip, "SenClaw
	// Sandbox" until then, says the first snapshot is in), or there is
	// nothing to tell.
	testutil.WaitFor(t, 10*time.Second, "the tray's first look at the engine", func() bool {
		return strings.HasPrefix(tooltipTitle(t, conn, sender), "SenClaw Sandbox: ")
	})
	on := true
	if r, err := c.SetAppSandbox(ctx, "notes", spaceapps.SandboxPatch{Enabled: &on}); err != nil || !r.NeedsRestart {
		t.Fatalf("enabling the sandbox: %+v %v", r, err)
	}
	testutil.WaitFor(t, 10*time.Second, "a needs-restart notification", func() bool { return len(notes.all()) >= 1 })
	n := notes.all()[0]
	if n.Summary != "Space App Notes b/b needs a restart" || !strings.Contains(n.Body, "Notes &lt;b&gt;&amp;&lt;/b&gt;: configured with a sandbox, running without one") {
		t.Errorf("needs-restart notification %+v", n)
	}
	testutil.WaitFor(t, 5*time.Second, "the attention icon and a tooltip naming the app", func() bool {
		return strings.Contains(tooltipTitle(t, conn, sender), "needs a restart") && pixmapIs(t, conn, sender, assets.TrayAttention())
	})
	item := findItem(t, menuOf(t, conn, sender), "Space Apps: 1 needs attention")
	click(t, conn, sender, item.id)
	testutil.WaitFor(t, 5*time.Second, "the Space Apps item to open the dashboard at the card", func() bool {
		return strings.Contains(tc.out.String(), "open-dashboard#space-apps")
	})

	// An app that gives up.
	crash := testutil.SandboxDir(t, "sapp-crash-")
	if err := os.Chmod(crash, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crash, "senclaw-app.json"), []byte(`{"id": "crash", "name": "Crash", "runtime": {"start": "echo 'Traceback: boom'; exit 3"}, "sandbox": {"enabled": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterApp(ctx, spaceapps.RegisterRequest{Dir: crash}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartApp(ctx, "crash", true); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "a gave-up notification", func() bool { return len(notes.all()) >= 2 })
	n = notes.all()[1]
	if n.Summary != "Space App Crash gave up: crash-looping" || !strings.Contains(n.Body, "Traceback: boom") {
		t.Errorf("gave-up notification %+v", n)
	}
	testutil.WaitFor(t, 5*time.Second, "the tooltip to name both", func() bool {
		return strings.Contains(tooltipTitle(t, conn, sender), "Crash is crash-looping")
	})
	if _, err := c.StopApp(ctx, "notes"); err != nil {
		t.Fatal(err)
	}
}
