package desktop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// The freedesktop notification service.
const (
	notifyName  = "org.freedesktop.Notifications"
	notifyPath  = "/org/freedesktop/Notifications"
	notifyIface = "org.freedesktop.Notifications"
)

// busNotifier sends notifications to the session's notification server.
type busNotifier struct {
	conn  *dbus.Conn
	icons func(Level) []byte
	mu    sync.Mutex
	ids   map[Kind]uint32 // the last notification of each kind, replaced by the next
}

// bodyEscaper makes text safe in a notification body that the server
// reads as markup (the specification's subset of XML).
var bodyEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// markup reports whether the notification server reads markup in bodies
// (its "body-markup" capability). Servers come and go with the session,
// so it is asked each time; a notification is rare.
func (b *busNotifier) markup(ctx context.Context) bool {
	var caps []string
	err := b.conn.Object(notifyName, notifyPath).CallWithContext(ctx, notifyIface+".GetCapabilities", 0).Store(&caps)
	return err == nil && slices.Contains(caps, "body-markup")
}

func newBusNotifier(conn *dbus.Conn, icons func(Level) []byte) *busNotifier {
	return &busNotifier{conn: conn, icons: icons, ids: map[Kind]uint32{}}
}

// Send shows n, replacing the previous notification of its kind so that a
// flapping backend does not stack bubbles.
func (b *busNotifier) Send(ctx context.Context, n Notification) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	urgency := byte(1)
	if n.Critical {
		urgency = 2
	}
	hints := map[string]dbus.Variant{
		"urgency":       dbus.MakeVariant(urgency),
		"desktop-entry": dbus.MakeVariant("senclaw"),
		"category":      dbus.MakeVariant("device"),
	}
	if px, ok := imageData(b.icons(n.Icon)); ok {
		hints["image-data"] = dbus.MakeVariant(px)
	}
	b.mu.Lock()
	replaces := b.ids[n.Kind]
	b.mu.Unlock()
	body := n.Body
	if b.markup(ctx) {
		// The body carries text from elsewhere (an agent's command): on a
		// server that reads markup in bodies, it must stay text.
		body = bodyEscaper.Replace(body)
	}
	var id uint32
	call := b.conn.Object(notifyName, notifyPath).CallWithContext(ctx, notifyIface+".Notify", 0,
		"SenClaw Sandbox", replaces, "", n.Summary, body, []string{}, hints, int32(-1))
	if err := call.Store(&id); err != nil {
		return fmt.Errorf("sending a notification: %w", err)
	}
	b.mu.Lock()
	b.ids[n.Kind] = id
	b.mu.Unlock()
	return nil
}

// rateLimit lets at most one notification of each kind through per period.
type rateLimit struct {
	every time.Duration
	now   func() time.Time
	mu    sync.Mutex
	last  map[Kind]time.Time
}

func newRateLimit(every time.Duration, now func() time.Time) *rateLimit {
	return &rateLimit{every: every, now: now, last: map[Kind]time.Time{}}
}

// allow reports whether a notification of kind may go now, and if so
// counts it as sent.
func (r *rateLimit) allow(kind Kind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if last, ok := r.last[kind]; ok && now.Sub(last) < r.every {
		return false
	}
	r.last[kind] = now
	return true
}
