// Package secevents records security events: refusals and degraded guarantees.
//
// A security event is a structured record of something the engine refused
// for a principal (a scope it does not hold, a tool its policy leaves
// out, another tenant's id, a token nobody has) or a guarantee it could
// not give. The engine, its API and its capabilities call one Recorder;
// events are logged with slog at once and stored off the caller's path
// (a refusal costs no disk write while the request waits), in a bounded
// bucket pruned oldest first, listed newest first, and handed to
// followers live (the dashboard's card, senclaw security-events --follow).
package secevents

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/store"
)

// The events' types are apitype's, which the faces share.
type (
	Event = apitype.SecurityEvent
	Query = apitype.SecurityEventQuery
	Page  = apitype.SecurityEventPage
)

// MaxRequest bounds the request text an event keeps, in characters.
const MaxRequest = 200

// maxReason bounds the reason an event keeps, in characters.
const maxReason = 1000

// Options configure a Recorder.
type Options struct {
	Store  *store.Store
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Max bounds the stored events (store.DefaultMaxSecurityEvents by
	// default).
	Max int
}

// Recorder records security events. Its methods are safe for concurrent
// use; a nil *Recorder records nothing.
type Recorder struct {
	opts Options

	mu      sync.Mutex
	queue   []Event
	last    time.Time
	dropped int
	subs    map[chan Event]struct{}

	// flushing is held while a batch goes to the store: a reader's Flush
	// waits for the writer's batch in flight, so that a list right after
	// a refusal shows it.
	flushing sync.Mutex

	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// maxQueue bounds the events waiting for the disk: a flood of refusals
// drops the excess (counted and logged) rather than growing without end.
const maxQueue = 4096

// New returns a Recorder writing to opts.Store. Close it before the store.
func New(opts Options) *Recorder {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Recorder{opts: opts, subs: map[chan Event]struct{}{}, wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go r.loop()
	return r
}

// Record records ev: its time and id are given here, its texts clipped.
// It logs at once and stores later; it never blocks on the disk.
func (r *Recorder) Record(ev Event) {
	if r == nil {
		return
	}
	ev.Request = clip(ev.Request, MaxRequest)
	ev.Reason = clip(ev.Reason, maxReason)
	ev.Principal = clip(ev.Principal, 200)
	r.mu.Lock()
	now := r.opts.Now().UTC()
	if !now.After(r.last) {
		now = r.last.Add(time.Nanosecond)
	}
	r.last = now
	ev.Time = now
	ev.ID = fmt.Sprintf("e%016x", now.UnixNano())
	if len(r.queue) >= maxQueue {
		r.dropped++
	} else {
		r.queue = append(r.queue, ev)
	}
	for ch := range r.subs {
		select {
		case ch <- ev:
		default: // a follower too slow to keep up misses events, never stalls a request
		}
	}
	r.mu.Unlock()
	r.opts.Logger.Warn("Security event.", "kind", ev.Kind, "principal", ev.Principal, "source", ev.Source, "request", ev.Request, "reason", ev.Reason, "remote", ev.Remote)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Follow returns a channel of the events recorded from now on, and the
// function that stops it.
func (r *Recorder) Follow() (<-chan Event, func()) {
	ch := make(chan Event, 256)
	r.mu.Lock()
	r.subs[ch] = struct{}{}
	r.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.subs, ch)
			r.mu.Unlock()
		})
	}
}

// loop stores what Record queued, a batch a commit.
func (r *Recorder) loop() {
	defer close(r.stopped)
	for {
		select {
		case <-r.wake:
			r.flush()
		case <-r.stop:
			r.flush()
			return
		}
	}
}

func (r *Recorder) flush() {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	batch, dropped := r.queue, r.dropped
	r.queue, r.dropped = nil, 0
	r.mu.Unlock()
	if dropped > 0 {
		r.opts.Logger.Error("Security events were dropped: more came at once than could be stored.", "dropped", dropped)
	}
	if len(batch) == 0 || r.opts.Store == nil {
		return
	}
	items := make([]store.SecurityItem, 0, len(batch))
	for _, ev := range batch {
		data, err := json.Marshal(ev)
		if err != nil {
			continue
		}
		items = append(items, store.SecurityItem{ID: ev.ID, Data: data})
	}
	if err := r.opts.Store.PutSecurityEvents(items, r.opts.Max); err != nil {
		r.opts.Logger.Error("Security events could not be stored.", "events", len(items), "err", err)
	}
}

// Flush stores what is queued now, so that a list right after a refusal
// shows it.
func (r *Recorder) Flush() {
	if r != nil {
		r.flush()
	}
}

// Close stores what is queued and stops the writer.
func (r *Recorder) Close() {
	if r == nil {
		return
	}
	r.once.Do(func() { close(r.stop) })
	<-r.stopped
}

// List lists the stored events that match q, newest first.
func (r *Recorder) List(q Query) (Page, error) {
	page := Page{Events: []Event{}}
	if r == nil || r.opts.Store == nil {
		return page, nil
	}
	r.Flush()
	if q.Limit <= 0 {
		q.Limit = 50
	}
	err := r.opts.Store.EachSecurityEvent(q.Before, func(_ string, data []byte) bool {
		var ev Event
		if json.Unmarshal(data, &ev) != nil || !Matches(q, ev) {
			return true
		}
		if len(page.Events) == q.Limit {
			page.More = true
			return false
		}
		page.Events = append(page.Events, ev)
		return true
	})
	return page, err
}

// Matches reports whether ev is one q selects.
func Matches(q Query, ev Event) bool {
	if q.Principal != "" && ev.Principal != q.Principal && !(strings.HasSuffix(q.Principal, ":") && strings.HasPrefix(ev.Principal, q.Principal)) {
		return false
	}
	if q.Kind != "" && !strings.HasPrefix(ev.Kind, q.Kind) {
		return false
	}
	switch q.Tenant {
	case "":
	case "-":
		if ev.Tenant != "" {
			return false
		}
	default:
		if ev.Tenant != q.Tenant {
			return false
		}
	}
	return true
}

// clip cuts s to at most n characters, on a character boundary, with
// invalid UTF-8 replaced.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}
