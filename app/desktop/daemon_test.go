//go:build linux

package desktop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/autostart"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/scheduler"
	"github.com/senclaw/sandbox/backends"
)

// fakeBox is an isolating backend whose health the test sets; it never
// runs anything.
type fakeBox struct {
	mu    sync.Mutex
	state backends.ProbeState
}

func (f *fakeBox) Name() string { return "fakebox" }

func (f *fakeBox) set(s backends.ProbeState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = s
}

func (f *fakeBox) Probe(context.Context) backends.Capability {
	f.mu.Lock()
	defer f.mu.Unlock()
	reason := "the test says it works"
	if f.state != backends.Healthy {
		reason = "the test took it away"
	}
	return backends.Capability{Backend: "fakebox", State: f.state, Isolates: true, Reason: reason, Enforces: []string{"fs"}, CheckedAt: time.Now()}
}

func (f *fakeBox) Start(context.Context, *backends.Spec) (backends.Process, error) {
	return nil, errors.New("fakebox runs nothing")
}

// testDaemon runs an engine and its API on a Unix socket, as `senclaw
// serve` does, and returns a client of it and the socket's path.
func testDaemon(t *testing.T, bs ...backends.Backend) (*client.Client, string) {
	t.Helper()
	root := testRoot(t)
	if err := os.MkdirAll(filepath.Join(root, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	e := testEngine(t, root, bs...)
	sched, err := scheduler.New(scheduler.Options{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	sched.Start(context.Background())
	t.Cleanup(sched.Stop) // before the engine closes (cleanups run last first)
	return serveAPI(t, root, api.Options{Engine: e, Autostart: &autostart.Entry{Dir: filepath.Join(root, "config", "autostart"), Exec: "/usr/bin/senclaw"}, Scheduler: sched})
}

// serveAPI serves opts's engine (and Space Apps) on a Unix socket in
// root/run until the test ends.
func serveAPI(t *testing.T, root string, opts api.Options) (*client.Client, string) {
	t.Helper()
	opts.Token = api.RandomToken()
	srv := api.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan api.DaemonInfo, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(ctx, api.DaemonOptions{RuntimeDir: filepath.Join(root, "run"), Ready: func(i api.DaemonInfo) { ready <- i }})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case info := <-ready:
		return client.DialSocket(info.Socket), info.Socket
	case err := <-done:
		t.Fatalf("the daemon did not start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not start within 10 s")
	}
	return nil, ""
}
