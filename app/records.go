package app

import (
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app/store"
)

// recordWriter saves run records and last-use times off the runs' critical
// path: a run's caller gets its result without waiting for the disk, and
// runs that end together share one commit. Readers of runs and events
// flush it first, so reading right after a run sees it. Writes keep their
// order, so a background run's "done" record never loses to its earlier
// "running" one.
type recordWriter struct {
	e *Engine

	mu      sync.Mutex
	queue   []queuedRecord
	touches map[string]time.Time
	waiters []chan struct{}

	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

type queuedRecord struct {
	rec   RunRecord
	after func() // runs once the record is stored (trace events)
	// stored, when set, hears whether the record reached the disk.
	stored chan error
	// ahead goes in the same commit (store.WriteWith).
	ahead []store.AheadEdit
}

func newRecordWriter(e *Engine) *recordWriter {
	w := &recordWriter{
		e: e, touches: map[string]time.Time{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	go w.loop()
	return w
}

// save queues rec; after, if set, runs once it is stored.
func (w *recordWriter) save(rec RunRecord, after func()) {
	w.mu.Lock()
	w.queue = append(w.queue, queuedRecord{rec: rec, after: after})
	w.mu.Unlock()
	w.poke()
}

// saveNow stores rec and waits until it is on disk (runs starting
// together share the commit). The runner saves every run so before it
// starts anything, so that an engine that dies leaves a record of it.
// ahead, edits of the sandboxes made ahead, go in the same
// commit.
func (w *recordWriter) saveNow(rec RunRecord, ahead ...store.AheadEdit) error {
	stored := make(chan error, 1)
	w.mu.Lock()
	w.queue = append(w.queue, queuedRecord{rec: rec, stored: stored, ahead: ahead})
	w.mu.Unlock()
	w.poke()
	select {
	case err := <-stored:
		return err
	case <-w.stopped:
		return errors.New("the engine is stopping")
	}
}

// touch queues a sandbox's last-use time.
func (w *recordWriter) touch(sandboxID string, at time.Time) {
	w.mu.Lock()
	w.touches[sandboxID] = at
	w.mu.Unlock()
	w.poke()
}

func (w *recordWriter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *recordWriter) loop() {
	defer close(w.stopped)
	for {
		select {
		case <-w.wake:
			w.drain()
		case <-w.stop:
			w.drain()
			return
		}
	}
}

// drain writes until nothing is queued, each round in one transaction.
func (w *recordWriter) drain() {
	for {
		w.mu.Lock()
		queue, touches, waiters := w.queue, w.touches, w.waiters
		w.queue, w.touches, w.waiters = nil, map[string]time.Time{}, nil
		w.mu.Unlock()
		if len(queue) == 0 && len(touches) == 0 && len(waiters) == 0 {
			return
		}
		w.write(queue, touches)
		for _, ch := range waiters {
			close(ch)
		}
	}
}

func (w *recordWriter) write(queue []queuedRecord, touches map[string]time.Time) {
	if len(queue) == 0 && len(touches) == 0 {
		return
	}
	items := make([]store.RunItem, len(queue))
	var ahead []store.AheadEdit
	for i, q := range queue {
		// The record by its address: as a value it would be copied to
		// the heap to go in an interface.
		items[i] = store.RunItem{ID: q.rec.ID, SandboxID: q.rec.SandboxID, Value: &queue[i].rec}
		ahead = append(ahead, q.ahead...)
	}
	edits := make(map[string]store.SandboxEdit, len(touches))
	for id, at := range touches {
		edits[id] = func(data []byte) ([]byte, error) {
			var sb Sandbox
			if err := json.Unmarshal(data, &sb); err != nil {
				return nil, err
			}
			if at.After(sb.LastUsedAt) {
				sb.LastUsedAt = at
			}
			return json.Marshal(sb)
		}
	}
	err := w.e.store.WriteWith(items, edits, ahead)
	if err != nil {
		w.e.log.Error("Run records could not be saved.", "runs", len(items), "err", err)
	}
	for _, q := range queue {
		if q.stored != nil {
			q.stored <- err
		}
		if q.after != nil {
			q.after()
		}
	}
}

// flush waits until everything queued before it is stored.
func (w *recordWriter) flush() {
	ch := make(chan struct{})
	w.mu.Lock()
	w.waiters = append(w.waiters, ch)
	w.mu.Unlock()
	w.poke()
	select {
	case <-ch:
	case <-w.stopped:
	}
}

// close stores what is queued and stops the writer.
func (w *recordWriter) close() {
	close(w.stop)
	<-w.stopped
}
