package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// The kill script reads the run's pid file, which the sandboxed code can
// write: what the engine keeps of its output is bounded, however large
// the file grew.
func TestKillReadsABoundedPidFile(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	b := newTestBackend(t, nil)
	spec := newSpec(t, b)
	s := *spec
	s.Argv = []string{"sh", "-c", "head -c 40000000 /dev/zero | tr '\\0' 7 > " + pidFile(s.RunID) + "; echo ready; sleep 60"}
	var out, errOut testutil.SyncBuffer
	s.Stdout, s.Stderr = &out, &errOut
	p, err := b.Start(context.Background(), &s)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(out.String(), "ready"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not get ready: %q %q", out.String(), errOut.String())
		}
	}
	got, code, err := p.(*process).execQuiet("cat " + pidFile(s.RunID))
	if err != nil || code != 0 {
		t.Fatalf("execQuiet: %d %v", code, err)
	}
	if len(got) > maxQuietOutput {
		t.Fatalf("the engine kept %d MiB of a script's output", len(got)>>20)
	}
	if err := p.Kill(); err != nil {
		t.Logf("kill: %v", err) // the forged pid file may make it fall back to a restart
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestKillIsNotHeldByAPlantedFifo: the sandboxed code can put a FIFO
// where the kill script reads the run's pid file (a remote daemon's way of
// killing, which reads it inside the container); the script then blocks
// on it. The engine gives up on it at its call timeout and restarts the
// container, which ends the run, rather than wait for ever with the run
// going (or give up on the restart too, its time spent on the script).
func TestKillIsNotHeldByAPlantedFifo(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	b := newTestBackend(t, func(o *Options) { o.inContainerKill = true })
	spec := newSpec(t, b)
	s := *spec
	s.Argv = []string{"sh", "-c", "rm -f " + pidFile(s.RunID) + "; mkfifo " + pidFile(s.RunID) + "; echo ready; sleep 600"}
	var out, errOut testutil.SyncBuffer
	s.Stdout, s.Stderr = &out, &errOut
	p, err := b.Start(context.Background(), &s)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(out.String(), "ready"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			p.Kill()
			t.Fatalf("the run did not get ready: %q %q", out.String(), errOut.String())
		}
	}
	ended := make(chan error, 1)
	go func() {
		// It says that it restarted the container.
		if err := p.Kill(); err != nil && !strings.Contains(err.Error(), "container was restarted") {
			ended <- err
			return
		}
		_, err := p.Wait()
		ended <- err
	}()
	limit := callTimeout + 30*time.Second
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("killing the run: %v", err)
		}
	case <-time.After(limit):
		t.Fatalf("the run was not killed within %s: a FIFO it planted held the kill", limit)
	}
}
