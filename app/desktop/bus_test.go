//go:build linux

package desktop

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"

	"github.com/senclaw/sandbox/internal/testutil"
)

// startBus starts a private session bus for the test and returns its
// address. The test never touches the user's own session bus.
func startBus(t *testing.T) string {
	t.Helper()
	return testutil.SessionBus(t)
}

// connect opens a connection of the test to the private bus.
func connect(t *testing.T, addr string) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connecting to the test bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ownName(t *testing.T, conn *dbus.Conn, name string) {
	t.Helper()
	reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning %s: %v (reply %d)", name, err, reply)
	}
}

// fakeWatcher is a StatusNotifierWatcher, the service a desktop's tray
// host runs and tray items register with.
type fakeWatcher struct {
	mu    sync.Mutex
	items []string // "sender service"
}

func (w *fakeWatcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.items = append(w.items, string(sender)+" "+service)
	return nil
}

func (w *fakeWatcher) RegisterStatusNotifierHost(service string) *dbus.Error { return nil }

// registered returns the bus name and object path of the first item
// that registered.
func (w *fakeWatcher) registered() (sender, path string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.items) == 0 {
		return "", "", false
	}
	sender, path, _ = strings.Cut(w.items[0], " ")
	return sender, path, true
}

func serveWatcher(t *testing.T, conn *dbus.Conn) *fakeWatcher {
	t.Helper()
	w := &fakeWatcher{}
	const path, iface = "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"
	if err := conn.Export(w, path, iface); err != nil {
		t.Fatal(err)
	}
	_, err := prop.Export(conn, path, prop.Map{iface: {
		"RegisteredStatusNotifierItems":  {Value: []string{}, Emit: prop.EmitTrue},
		"IsStatusNotifierHostRegistered": {Value: true, Emit: prop.EmitTrue},
		"ProtocolVersion":                {Value: int32(0), Emit: prop.EmitTrue},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, iface)
	return w
}

// notifyCall is one Notify call the fake notification server received.
type notifyCall struct {
	AppName  string
	Replaces uint32
	Summary  string
	Body     string
	Hints    map[string]dbus.Variant
	At       time.Time
}

// fakeNotifications is an org.freedesktop.Notifications server that
// records what it is asked to show.
type fakeNotifications struct {
	mu    sync.Mutex
	calls []notifyCall
	// markup makes the server announce "body-markup".
	markup bool
}

func (f *fakeNotifications) Notify(appName string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, notifyCall{appName, replaces, summary, body, hints, time.Now()})
	return uint32(len(f.calls)), nil
}

func (f *fakeNotifications) GetCapabilities() ([]string, *dbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.markup {
		return []string{"body", "body-markup", "icon-static"}, nil
	}
	return []string{"body", "icon-static"}, nil
}

func (f *fakeNotifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "fake", "senclaw tests", "1.0", "1.2", nil
}

func (f *fakeNotifications) CloseNotification(id uint32) *dbus.Error { return nil }

func (f *fakeNotifications) all() []notifyCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]notifyCall(nil), f.calls...)
}

func serveNotifications(t *testing.T, conn *dbus.Conn) *fakeNotifications {
	t.Helper()
	f := &fakeNotifications{}
	if err := conn.Export(f, notifyPath, notifyIface); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, notifyName)
	return f
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Text from elsewhere (an agent's command) stays text in a notification:
// escaped for a server that reads markup in bodies, as it is otherwise.
func TestNotificationBodyIsText(t *testing.T) {
	t.Parallel()
	addr := startBus(t)
	server := connect(t, addr)
	notes := serveNotifications(t, server)
	b := newBusNotifier(connect(t, addr), trayIcon)
	body := `agent: curl "http://x/?a=1&b=2" <img src="file:///etc/shadow">`
	for _, markup := range []bool{false, true} {
		notes.mu.Lock()
		notes.markup = markup
		notes.mu.Unlock()
		if err := b.Send(callCtx(t), Notification{Kind: KindRefused, Summary: "A run was refused", Body: body}); err != nil {
			t.Fatal(err)
		}
		all := notes.all()
		got := all[len(all)-1].Body
		want := body
		if markup {
			want = `agent: curl "http://x/?a=1&amp;b=2" &lt;img src="file:///etc/shadow"&gt;`
		}
		if got != want {
			t.Errorf("markup %v: body %q, want %q", markup, got, want)
		}
	}
}
