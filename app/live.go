package app

import (
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// liveRuns registers the processes that are running now, per sandbox, so
// that Stop, Kill, Delete and the monitor see every run however it was
// started (CLI, REST, MCP, a background server).
type liveRuns struct {
	mu        sync.Mutex
	bySandbox map[string]map[string]*liveRun
	wg        sync.WaitGroup
}

type liveRun struct {
	id        string
	sandboxID string
	command   string
	started   time.Time
	proc      backends.Process
	done      chan struct{}
	// logFile is a background run's log, "" for a foreground run, and
	// workspace the workspace it is in.
	logFile, workspace string
	// output is what a foreground run writes, for its readers (nil for
	// a background run, whose output goes to logFile).
	output *outputRing

	mu     sync.Mutex
	reason string // why the engine killed it, "" if it did not
}

func newLiveRuns() *liveRuns {
	return &liveRuns{bySandbox: map[string]map[string]*liveRun{}}
}

func (l *liveRuns) add(r *liveRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.bySandbox[r.sandboxID]
	if m == nil {
		m = map[string]*liveRun{}
		l.bySandbox[r.sandboxID] = m
	}
	m[r.id] = r
	l.wg.Add(1)
}

func (l *liveRuns) remove(r *liveRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.bySandbox[r.sandboxID]; m != nil {
		delete(m, r.id)
		if len(m) == 0 {
			delete(l.bySandbox, r.sandboxID)
		}
	}
	close(r.done)
	l.wg.Done()
}

func (l *liveRuns) count(sandboxID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.bySandbox[sandboxID])
}

// all returns every live run.
func (l *liveRuns) all() []*liveRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*liveRun
	for _, m := range l.bySandbox {
		for _, r := range m {
			out = append(out, r)
		}
	}
	return out
}

// output is the output of the foreground run id going on, nil when no
// such run is going.
func (l *liveRuns) output(id string) *outputRing {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.bySandbox {
		if r := m[id]; r != nil {
			return r.output
		}
	}
	return nil
}

func (l *liveRuns) runs(sandboxID string) []*liveRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*liveRun
	for _, r := range l.bySandbox[sandboxID] {
		out = append(out, r)
	}
	return out
}

// kill kills r's process tree and remembers why.
func (r *liveRun) kill(reason string) {
	r.mu.Lock()
	if r.reason == "" {
		r.reason = reason
	}
	r.mu.Unlock()
	_ = r.proc.Kill()
}

func (r *liveRun) killReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

func (l *liveRuns) killSandbox(sandboxID, reason string) int {
	runs := l.runs(sandboxID)
	for _, r := range runs {
		r.kill(reason)
	}
	return len(runs)
}

func (l *liveRuns) waitSandbox(sandboxID string) {
	for _, r := range l.runs(sandboxID) {
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
		}
	}
}

func (l *liveRuns) killAll() int {
	l.mu.Lock()
	var all []*liveRun
	for _, m := range l.bySandbox {
		for _, r := range m {
			all = append(all, r)
		}
	}
	l.mu.Unlock()
	for _, r := range all {
		r.kill("stopped")
	}
	return len(all)
}

// wait waits up to d for every live run to end.
func (l *liveRuns) wait(d time.Duration) {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}
