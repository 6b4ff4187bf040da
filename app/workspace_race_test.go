package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// The engine writes into the workspace (a run's code, a background run's
// log) while sandboxed code may be running there. Code that keeps
// swapping .runs for a symlink out of the workspace must never get the
// engine to create a file outside it.
func TestEngineWritesStayInTheWorkspace(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	sb, err := e.Create(context.Background(), directConfig())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	runs := filepath.Join(sb.Workspace, ".runs")
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A directory and a symlink out of the workspace, swapped
		// atomically, again and again.
		alt := runs + ".alt"
		os.Mkdir(runs, 0o700)
		e.chownToSandbox(sb, runs) // as the engine or the sandbox would make it
		os.Symlink(outside, alt)
		for !stop.Load() {
			unix.Renameat2(unix.AT_FDCWD, runs, unix.AT_FDCWD, alt, unix.RENAME_EXCHANGE)
		}
	}()
	created := 0
	for i := range 20000 {
		f, err := e.createInWorkspace(sb, ".runs", fmt.Sprintf("r%d.log", i))
		if err == nil {
			created++
			f.Close()
		}
	}
	stop.Store(true)
	<-done
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Fatalf("the engine created %d files outside the workspace, through the symlink: %v", len(left), left[0].Name())
	}
	if created == 0 {
		t.Fatal("no file was created at all; the test proves nothing")
	}
	// A symlink that is simply there is refused with a message.
	os.RemoveAll(runs)
	if err := os.Symlink(outside, runs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.createInWorkspace(sb, ".runs", "x.log"); err == nil {
		t.Fatal("a .runs symlink out of the workspace was followed")
	}
}

// The workspace is bound from a checked handle whenever its stored path is
// exact: always for an agent's (validated) project dir and for an own
// workspace under a plain path, never for one whose data dir sits behind
// a symlink (its stored path is not its real one, and that is no attack).
func TestShapeSpecWorkspaceExact(t *testing.T) {
	t.Parallel()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(real)
	for _, tc := range []struct {
		sb   Sandbox
		want bool
	}{
		{Sandbox{ID: "a", Kind: "agent", Workspace: realDir}, true},
		{Sandbox{ID: "b", Workspace: realDir, OwnWorkspace: true}, true},
		{Sandbox{ID: "c", Workspace: link, OwnWorkspace: true}, false},
	} {
		if got := (&Engine{}).shapeSpec(&tc.sb, nil).WorkspaceExact; got != tc.want {
			t.Errorf("%+v: WorkspaceExact %v, want %v", tc.sb, got, tc.want)
		}
	}
}
