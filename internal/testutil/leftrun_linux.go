package testutil

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends/limits"
)

// LeftRun makes the cgroups of run runID of sandboxID as a dead engine's
// run leaves them, with a process still in them, and returns it; nil
// where no run cgroup can be made (which fails the test under CI=true).
// The test's cleanup kills it if it is still there.
func LeftRun(t testing.TB, sandboxID, runID string) *exec.Cmd {
	t.Helper()
	cg, err := limits.Detect().Create(sandboxID, runID, nil)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no run cgroup can be made here: %v", err)
		}
		return nil
	}
	p := exec.Command("sleep", "300")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Process.Kill() })
	if err := cg.Add(p.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return p
}

// CheckLeftRunGone checks that what LeftRun made is gone: the process
// ended (within 10 s) and the run's cgroups were removed.
func CheckLeftRunGone(t testing.TB, p *exec.Cmd, sandboxID, runID string) {
	t.Helper()
	if p == nil {
		return
	}
	waited := make(chan error, 1)
	go func() { waited <- p.Wait() }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Error("the process in the left run's cgroup lives on")
	}
	if limits.Detect().Leftover(sandboxID, runID) != nil {
		t.Error("the left run's cgroups are still there")
	}
}
