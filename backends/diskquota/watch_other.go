//go:build !linux

package diskquota

import (
	"fmt"
	"sync"
	"time"
)

// Watchdog counts the workspaces that runs use. Outside Linux there is no
// inotify here: each look walks the workspace.
type Watchdog struct {
	// Interval is how often the workspace is walked (default 1 s).
	Interval time.Duration
}

// NewWatchdog returns a watchdog.
func NewWatchdog() *Watchdog { return &Watchdog{Interval: time.Second} }

// Watch is one run's watch of its workspace.
type Watch struct {
	over   chan struct{}
	quit   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	reason string
	bytes  int64
	files  int64
}

// Watch starts walking ws every Interval for a run with quota limitMB.
func (wd *Watchdog) Watch(ws string, limitMB int, _ func() []int) *Watch {
	w := &Watch{over: make(chan struct{}), quit: make(chan struct{})}
	limit, maxFiles := int64(limitMB)<<20, Inodes(limitMB)
	go func() {
		t := time.NewTicker(wd.Interval)
		defer t.Stop()
		for {
			bytes, files := walkUsage(ws)
			w.mu.Lock()
			w.bytes, w.files = bytes, files
			w.mu.Unlock()
			reason := ""
			switch {
			case bytes > limit:
				reason = fmt.Sprintf("the workspace holds %d MB, more than its %d MB disk quota", bytes>>20, limitMB)
			case files > maxFiles:
				reason = fmt.Sprintf("the workspace holds %d files, more than the %d its %d MB disk quota allows", files, maxFiles, limitMB)
			}
			if reason != "" {
				w.mu.Lock()
				w.reason = reason
				w.mu.Unlock()
				close(w.over)
				return
			}
			select {
			case <-w.quit:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// Exceeded is closed when the workspace passes the quota.
func (w *Watch) Exceeded() <-chan struct{} { return w.over }

// Reason says why Exceeded was closed.
func (w *Watch) Reason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

// Usage is the count at the last walk.
func (w *Watch) Usage() (bytes, files int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes, w.files
}

// Stop ends the watch.
func (w *Watch) Stop() { w.once.Do(func() { close(w.quit) }) }

// Close does nothing: each watch stops on its own.
func (*Watchdog) Close() {}
