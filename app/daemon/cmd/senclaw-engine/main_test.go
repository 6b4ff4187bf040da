package main

import (
	"slices"
	"testing"

	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/envexec"
	"github.com/senclaw/sandbox/backends/idmap"
	"github.com/senclaw/sandbox/backends/landlock"
	"github.com/senclaw/sandbox/backends/reexec"
)

// TestEveryHelperIsRegistered: the executable the engine starts its
// helpers from knows each of them, and no other.
func TestEveryHelperIsRegistered(t *testing.T) {
	t.Parallel()
	want := []string{envexec.Arg, direct.ReaperArg, idmap.Arg, landlock.HelperCommand}
	slices.Sort(want)
	if got := reexec.Names(); !slices.Equal(got, want) {
		t.Errorf("the helpers registered: %q, want %q", got, want)
	}
}
