package direct

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/tracer"
	"github.com/senclaw/sandbox/internal/testutil"
)

func TestTracedCommandEndsLikeAnUntracedOne(t *testing.T) {
	t.Parallel()
	requireTracer(t)
	ws, _ := os.MkdirTemp("", "senclaw-direct-")
	os.Chmod(ws, 0o777)
	defer os.RemoveAll(ws)
	var mu sync.Mutex
	var got []string
	var out bytes.Buffer
	spec := &backends.Spec{
		Workspace: ws,
		Argv:      []string{"/bin/sh", "-c", "/bin/true; sleep 30 >/dev/null 2>&1 & echo hi > out.txt; echo done; exit 4"},
		Env:       []string{"PATH=/usr/bin:/bin"},
		User:      &backends.Credential{UID: 65534, GID: 65534},
		Stdout:    &out,
		Trace: func(ev backends.TraceEvent) {
			mu.Lock()
			got = append(got, ev.Kind+" "+ev.Target)
			mu.Unlock()
		},
	}
	start := time.Now()
	p, err := New(Options{Launcher: testutil.Launcher(t)}).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	if err != nil || st.Code != 4 || out.String() != "done\n" || time.Since(start) > 10*time.Second {
		t.Fatalf("status %+v %v, output %q, after %s", st, err, out.String(), time.Since(start))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, w := range []string{"proc.spawn /bin/sh", "proc.spawn /bin/true", "file.write " + filepath.Join(ws, "out.txt")} {
		if !slices.Contains(got, w) {
			t.Errorf("events lack %q: %q", w, got)
		}
	}
}

// A command that is over before anyone looks at strace's children must
// still end its run: many at once, on a busy machine, make that likely.
func TestTracedShortCommandsEndTogether(t *testing.T) {
	t.Parallel()
	requireTracer(t)
	ws := t.TempDir()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan string, 24)
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := New(Options{Launcher: testutil.Launcher(t)}).Start(context.Background(), &backends.Spec{
				Workspace: ws,
				Argv:      []string{"/bin/sh", "-c", "sleep 30 >/dev/null 2>&1 & exit 3"},
				Env:       []string{"PATH=/usr/bin:/bin"},
				Trace:     func(backends.TraceEvent) {},
			})
			if err != nil {
				errs <- err.Error()
				return
			}
			if st, err := p.Wait(); err != nil || st.Code != 3 {
				errs <- fmt.Sprintf("status %+v %v", st, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("24 traced short commands took %s: the background sleeps kept them alive", d)
	}
}

// requireTracer skips when strace cannot trace here, except under CI=true,
// where that is a failure.
func requireTracer(t *testing.T) {
	t.Helper()
	if ok, why := tracer.Available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
}
