package bwrap

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestTerminateLetsTheTreeEndCleanly: SIGTERM reaches the command and its
// child inside the sandbox (bwrap's own processes pass nothing on), both
// run their handlers, and the sandbox ends with the command's exit code.
func TestTerminateLetsTheTreeEndCleanly(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	for _, u := range sandboxUsers(t) {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			d := newTestDirs(t, u)
			b := New(Options{SandboxUser: u.Cred})
			script := `sh -c 'trap "echo child-term; exit 0" TERM; echo child-ready; while :; do sleep 0.05; done' &
trap 'echo parent-term; wait; exit 3' TERM
echo ready
while :; do sleep 0.05; done`
			spec := newSpec(t, u, d.ws, "/bin/sh", "-c", script)
			out := &lockedBuffer{}
			spec.Stdout, spec.Stderr = out, out
			p, err := b.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			deadline := time.Now().Add(10 * time.Second)
			// Both traps are set once both have said so.
			ready := func() bool {
				lines := strings.Split(out.String(), "\n")
				return slices.Contains(lines, "ready") && slices.Contains(lines, "child-ready")
			}
			for !ready() || len(p.Pids()) < 4 {
				if time.Now().After(deadline) {
					t.Fatalf("the sandbox did not start: %q, pids %v", out.String(), p.Pids())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := p.(backends.Terminator).Terminate(); err != nil {
				t.Fatal(err)
			}
			done := make(chan backends.ExitStatus, 1)
			go func() { st, _ := p.Wait(); done <- st }()
			select {
			case st := <-done:
				if st.Code != 3 || !strings.Contains(out.String(), "parent-term") || !strings.Contains(out.String(), "child-term") {
					t.Fatalf("status %+v, output %q", st, out.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the sandbox did not end on SIGTERM: %q", out.String())
			}
		})
	}
}
