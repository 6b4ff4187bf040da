//go:build linux

package desktop

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/assets"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/reexec"
	"github.com/senclaw/sandbox/internal/testutil"
)

// The tray test runs the tray in a child process (this test binary run
// again): systray keeps its state in package variables and dials the
// session bus named by the environment, so each tray gets a fresh process
// pointed at the test's private bus.
const (
	envTraySocket = "SENCLAW_TEST_TRAY_SOCKET"
	trayNotifyGap = 2 * time.Second
)

// TestMain runs the tray child when the parent test asks for it, outside
// the testing framework (which would count systray's own data races, see
// below, as a failure of the child).
func TestMain(m *testing.M) {
	reexec.Init()
	if sock := os.Getenv(envTraySocket); sock != "" {
		os.Exit(trayChild(sock))
	}
	os.Exit(m.Run())
}

// trayChild is the child: a tray on the socket's engine until Quit in its
// menu or SIGTERM. It prints "open-dashboard" for each click on Open
// dashboard, and "tray-stopped" once the tray is down.
func trayChild(sock string) int {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	stop, err := StartTray(ctx, TrayOptions{
		Client:          client.DialSocket(sock),
		BusAddress:      os.Getenv("DBUS_SESSION_BUS_ADDRESS"),
		Notifications:   true,
		NotifyEvery:     trayNotifyGap,
		PollInterval:    100 * time.Millisecond,
		OpenDashboard:   func() { fmt.Println("open-dashboard") },
		OpenDashboardAt: func(anchor string) { fmt.Println("open-dashboard#" + anchor) },
		Quit:            cancel,
		Logger:          log,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tray child:", err)
		return 1
	}
	<-ctx.Done()
	stop()
	fmt.Println("tray-stopped")
	return 0
}

// output is a file a child writes to, read while it runs.
type output struct{ f *os.File }

func outputFile(t *testing.T, name string) output {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return output{f}
}

func (o output) String() string {
	data, _ := os.ReadFile(o.f.Name())
	return string(data)
}

// menuItem is one entry of a dbusmenu layout.
type menuItem struct {
	id      int32
	label   string
	toggle  string // "checkmark" for a check item
	checked bool
	enabled bool
	sep     bool
}

// menuOf reads the tray's menu over D-Bus, as a desktop's tray host does.
func menuOf(t *testing.T, conn *dbus.Conn, sender string) []menuItem {
	t.Helper()
	var rev uint32
	var layout struct {
		ID    int32
		Props map[string]dbus.Variant
		Kids  []dbus.Variant
	}
	err := conn.Object(sender, "/StatusNotifierItem/menu").CallWithContext(callCtx(t), "com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &layout)
	if err != nil {
		t.Fatalf("GetLayout: %v", err)
	}
	var items []menuItem
	for _, kid := range layout.Kids {
		parts, ok := kid.Value().([]any)
		if !ok || len(parts) != 3 {
			t.Fatalf("unexpected menu entry %#v", kid.Value())
		}
		props, _ := parts[1].(map[string]dbus.Variant)
		it := menuItem{id: parts[0].(int32), enabled: true}
		for k, v := range props {
			switch k {
			case "label":
				it.label, _ = v.Value().(string)
			case "toggle-type":
				it.toggle, _ = v.Value().(string)
			case "toggle-state":
				it.checked = reflect.ValueOf(v.Value()).Int() == 1
			case "enabled":
				it.enabled, _ = v.Value().(bool)
			case "type":
				it.sep = v.Value() == "separator"
			}
		}
		items = append(items, it)
	}
	return items
}

func findItem(t *testing.T, items []menuItem, label string) menuItem {
	t.Helper()
	for _, it := range items {
		if it.label == label {
			return it
		}
	}
	t.Fatalf("no menu item %q in %+v", label, items)
	return menuItem{}
}

func click(t *testing.T, conn *dbus.Conn, sender string, id int32) {
	t.Helper()
	call := conn.Object(sender, "/StatusNotifierItem/menu").CallWithContext(callCtx(t), "com.canonical.dbusmenu.Event", 0, id, "clicked", dbus.MakeVariant(""), uint32(0))
	if call.Err != nil {
		t.Fatalf("clicking item %d: %v", id, call.Err)
	}
}

// itemProp reads a property of the tray item.
func itemProp(t *testing.T, conn *dbus.Conn, sender, name string) any {
	t.Helper()
	v, err := conn.Object(sender, "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem." + name)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return v.Value()
}

func tooltipTitle(t *testing.T, conn *dbus.Conn, sender string) string {
	parts, _ := itemProp(t, conn, sender, "ToolTip").([]any)
	if len(parts) != 4 {
		return ""
	}
	s, _ := parts[2].(string)
	return s
}

// pixmapIs reports whether the item's icon is the PNG want.
func pixmapIs(t *testing.T, conn *dbus.Conn, sender string, want []byte) bool {
	pix, _ := itemProp(t, conn, sender, "IconPixmap").([][]any)
	if len(pix) != 1 || len(pix[0]) != 3 {
		return false
	}
	img, _, err := image.Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	argb := make([]byte, 0, b.Dx()*b.Dy()*4)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			argb = append(argb, byte(a), byte(r), byte(g), byte(bl))
		}
	}
	return pix[0][0] == int32(b.Dx()) && pix[0][1] == int32(b.Dy()) && bytes.Equal(pix[0][2].([]byte), argb)
}

func TestTrayOverDBus(t *testing.T) {
	addr := startBus(t)
	conn := connect(t, addr)
	if TrayHostPresent(addr) {
		t.Fatal("TrayHostPresent on a bus with no StatusNotifierWatcher")
	}
	watcher := serveWatcher(t, conn)
	if !TrayHostPresent(addr) {
		t.Fatal("TrayHostPresent does not see the StatusNotifierWatcher")
	}
	notes := serveNotifications(t, conn)
	box := &fakeBox{state: backends.Healthy}
	c, sock := testDaemon(t, box)
	tc := startTrayProc(t, sock, addr)
	out, exited := tc.out, tc.exited
	sender := tc.register(t, watcher)

	// The menu has the switches, showing the engine's policy, once the
	// first poll is in.
	pol, err := c.Policy(callCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var items []menuItem
	testutil.WaitFor(t, 5*time.Second, "the menu to show the engine's state", func() bool {
		items = menuOf(t, conn, sender)
		return len(items) > 0 && strings.HasPrefix(items[0].label, "Isolated")
	})
	for _, label := range []string{"Open dashboard", "Start at login", "Stop all sandboxes", "Quit"} {
		findItem(t, items, label)
	}
	wantOn := map[string]bool{"Agent shell": pol.ExecShell, "Scheduler scripts": pol.SchedulerScript, "Run Python": pol.RunPython, "Run Node": pol.RunNode}
	for label, on := range wantOn {
		it := findItem(t, items, label)
		if it.toggle != "checkmark" || it.checked != on || !it.enabled {
			t.Errorf("%s: %+v, want an enabled check item, checked=%v", label, it, on)
		}
	}
	if items[0].enabled {
		t.Errorf("the status line %q should be disabled (it is not an action)", items[0].label)
	}
	if got := tooltipTitle(t, conn, sender); !strings.Contains(got, "Isolated") {
		t.Errorf("tooltip %q, want the isolated state", got)
	}
	if !pixmapIs(t, conn, sender, assets.TrayIsolated()) {
		t.Error("the icon is not the isolated one")
	}

	// Clicking a switch changes the policy through the API.
	click(t, conn, sender, findItem(t, items, "Agent shell").id)
	testutil.WaitFor(t, 5*time.Second, "the click to turn the agent shell switch on in the engine", func() bool {
		p, err := c.Policy(callCtx(t))
		return err == nil && p.ExecShell == !pol.ExecShell
	})
	testutil.WaitFor(t, 5*time.Second, "the menu to show the switch's new state", func() bool {
		return findItem(t, menuOf(t, conn, sender), "Agent shell").checked == !pol.ExecShell
	})

	// Start at login: off on a fresh config; a click writes the entry, a
	// second click removes it, and the menu shows what is on disk.
	entry := filepath.Join(filepath.Dir(filepath.Dir(sock)), "config", "autostart", "senclaw.desktop")
	if it := findItem(t, items, "Start at login"); it.toggle != "checkmark" || it.checked || !it.enabled {
		t.Errorf("Start at login: %+v, want an enabled, unchecked check item", it)
	}
	click(t, conn, sender, findItem(t, items, "Start at login").id)
	testutil.WaitFor(t, 5*time.Second, "Start at login to write the autostart entry", func() bool {
		_, err := os.Stat(entry)
		return err == nil && findItem(t, menuOf(t, conn, sender), "Start at login").checked
	})
	os.Remove(entry) // removed by hand: the menu follows the disk
	testutil.WaitFor(t, 5*time.Second, "the menu to show the entry removed by hand", func() bool {
		return !findItem(t, menuOf(t, conn, sender), "Start at login").checked
	})

	// A change made elsewhere (the dashboard, the CLI) shows in the menu.
	p, _ := c.Policy(callCtx(t))
	p.RunNode = !p.RunNode
	if _, err := c.SetPolicy(callCtx(t), *p); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the menu to follow a policy change made through the API", func() bool {
		return findItem(t, menuOf(t, conn, sender), "Run Node").checked == p.RunNode
	})
	if len(notes.all()) != 0 {
		t.Fatalf("notifications before any change of isolation: %+v", notes.all())
	}

	// The backend goes away: a notification, and the icon asks for
	// attention.
	box.set(backends.SeenGone)
	testutil.WaitFor(t, 5*time.Second, "a notification that isolation was lost", func() bool { return len(notes.all()) >= 1 })
	lost := notes.all()[0]
	lostAt := lost.At
	if lost.AppName != "SenClaw Sandbox" || lost.Summary != "Isolation lost: fakebox stopped working" || !strings.Contains(lost.Body, "fakebox: the test took it away") {
		t.Errorf("isolation-lost notification = %+v", lost)
	}
	if u, _ := lost.Hints["urgency"].Value().(byte); u != 2 {
		t.Errorf("urgency %v, want critical (2)", lost.Hints["urgency"].Value())
	}
	if img, _ := lost.Hints["image-data"].Value().([]any); len(img) != 7 || img[0] != int32(64) || img[3] != true {
		t.Errorf("the image-data hint is not a 64x64 RGBA image (%d fields)", len(img))
	}
	testutil.WaitFor(t, 5*time.Second, "the attention icon and tooltip", func() bool {
		return strings.Contains(tooltipTitle(t, conn, sender), "fakebox stopped working") && pixmapIs(t, conn, sender, assets.TrayAttention())
	})
	if got := menuOf(t, conn, sender)[0].label; !strings.Contains(got, "stopped working") {
		t.Errorf("status line %q, want the lost backend", got)
	}

	// A run refused because nothing can isolate: a notification of its
	// own kind, not held back by the isolation one.
	_, err = c.RunOnce(callCtx(t), client.RunOnceBody{RunBody: client.RunBody{Command: "echo refused-run"}}, nil)
	if !client.IsRefused(err) {
		t.Fatalf("run with no isolation: %v, want a refusal", err)
	}
	testutil.WaitFor(t, 5*time.Second, "a notification of the refused run", func() bool { return len(notes.all()) >= 2 })
	ref := notes.all()[1]
	if ref.Summary != "A run was refused: nothing can isolate" || !strings.Contains(ref.Body, "echo refused-run") {
		t.Errorf("refused-run notification = %+v", ref)
	}

	// The backend comes back within the rate limit's window: the news
	// waits for the window to pass, then comes, once.
	box.set(backends.Healthy)
	time.Sleep(time.Until(lostAt.Add(trayNotifyGap * 6 / 10)))
	for _, n := range notes.all()[2:] {
		t.Errorf("notification inside the rate limit's window: %+v", n)
	}
	testutil.WaitFor(t, 3*trayNotifyGap, "the held-back notification that isolation is back", func() bool { return len(notes.all()) >= 3 })
	back := notes.all()[2]
	if back.Summary != "Isolation is back: code runs in fakebox sandboxes" {
		t.Errorf("isolation-back notification = %+v", back)
	}
	if gap := back.At.Sub(lostAt); gap < trayNotifyGap-200*time.Millisecond {
		t.Errorf("two isolation notifications %v apart, want at least %v", gap, trayNotifyGap)
	}
	if back.Replaces != 1 {
		t.Errorf("the second isolation notification replaces %d, want the first (1)", back.Replaces)
	}
	testutil.WaitFor(t, 5*time.Second, "the isolated icon again", func() bool { return pixmapIs(t, conn, sender, assets.TrayIsolated()) })

	// Open dashboard asks the shell to show the window; Quit ends it.
	click(t, conn, sender, findItem(t, items, "Open dashboard").id)
	testutil.WaitFor(t, 5*time.Second, "Open dashboard to reach the shell", func() bool { return strings.Contains(out.String(), "open-dashboard") })
	click(t, conn, sender, findItem(t, items, "Quit").id)
	select {
	case <-exited:
		if tc.waitErr != nil {
			t.Fatalf("the tray process ended with %v after Quit", tc.waitErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tray did not quit within 10 s of Quit")
	}
	if !strings.Contains(out.String(), "tray-stopped") {
		t.Error("the tray process did not stop its tray")
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(notes.all()); n != 3 {
		t.Errorf("%d notifications in all, want 3: %+v", n, notes.all())
	}
}

// trayProc is a tray running in a child process (this test binary).
type trayProc struct {
	out, errOut output
	exited      chan struct{} // closed when the child has ended
	waitErr     error
}

// startTrayProc runs a tray on the engine at sock in a child process on
// the private bus at addr, ended when the test ends.
func startTrayProc(t *testing.T, sock, addr string) *trayProc {
	t.Helper()
	// Files, not pipes: Wait must not hang on a pipe that something the
	// child started still holds.
	tc := &trayProc{out: outputFile(t, "stdout"), errOut: outputFile(t, "stderr"), exited: make(chan struct{})}
	child := exec.Command(os.Args[0])
	// Under -race, systray v1.12.2 races on its own menu version (read
	// in GetLayout under one lock, written in refresh under another);
	// the child does not fail on that, and racesOfOurs below fails the
	// test on any race report that involves this module's code.
	child.Env = append(os.Environ(), envTraySocket+"="+sock, "DBUS_SESSION_BUS_ADDRESS="+addr, "GORACE=exitcode=0")
	child.Stdout, child.Stderr = tc.out.f, tc.errOut.f
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		tc.waitErr = child.Wait()
		close(tc.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-tc.exited:
		default:
			child.Process.Signal(syscall.SIGTERM)
			select {
			case <-tc.exited:
			case <-time.After(5 * time.Second):
				child.Process.Kill()
				<-tc.exited
			}
		}
		if races := racesOfOurs(tc.errOut.String()); len(races) > 0 {
			t.Errorf("data races in our code in the tray process:\n%s", strings.Join(races, "\n"))
		}
		if t.Failed() {
			t.Logf("tray process stdout:\n%s\nstderr:\n%s", tc.out.String(), tc.errOut.String())
		}
	})
	return tc
}

// register waits for the child's item to register with the desktop's
// watcher and returns its bus name.
func (tc *trayProc) register(t *testing.T, watcher *fakeWatcher) string {
	t.Helper()
	var sender, path string
	testutil.WaitFor(t, 10*time.Second, "the tray item to register with the StatusNotifierWatcher", func() bool {
		var ok bool
		sender, path, ok = watcher.registered()
		return ok
	})
	if path != "/StatusNotifierItem" {
		t.Errorf("registered %q, want the item path /StatusNotifierItem", path)
	}
	return sender
}

// racesOfOurs returns the race detector's reports in a child's stderr that
// involve this module's code.
func racesOfOurs(stderr string) []string {
	var ours []string
	for _, report := range strings.Split(stderr, "WARNING: DATA RACE")[1:] {
		report, _, _ = strings.Cut(report, "==================")
		if strings.Contains(report, "github.com/senclaw/sandbox/") {
			ours = append(ours, report)
		}
	}
	return ours
}
