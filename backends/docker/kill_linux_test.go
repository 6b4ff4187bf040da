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
