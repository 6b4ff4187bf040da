package monitor

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestOwnsUsesFreshListing(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	old := r.clock.Now().Add(-time.Minute)
	r.lister.set(1, 0, old, 0, 0, "init")
	r.lister.set(100, 1, old, 0, 0, "bwrap")
	r.lister.set(101, 100, old, 0, 0, "sh")
	r.lister.set(200, 1, old, 0, 0, "other sandbox")
	r.lister.set(300, 1, old, 0, 0, "host process")
	r.roots.set("a", 100)
	r.roots.set("b", 200)
	r.sample(t)

	// Started after the last sample: owned all the same.
	r.lister.set(102, 101, old, 0, 0, "new grandchild")
	// Exited after the last sample: not owned any more.
	r.lister.remove(101)
	r.lister.set(103, 1, old, 0, 0, "reparented to init")

	cases := []struct {
		name string
		id   string
		pid  int
		want bool
	}{
		{"root", "a", 100, true},
		{"exited_child", "a", 101, false},
		{"orphaned_grandchild", "a", 102, false},
		{"other_sandbox", "a", 200, false},
		{"host_process", "a", 300, false},
		{"init", "a", 1, false},
		{"pid_zero", "a", 0, false},
		{"negative", "a", -100, false},
		{"unknown_sandbox", "nope", 100, false},
		{"b_root", "b", 200, true},
	}
	for _, tc := range cases {
		if got := r.s.Owns(tc.id, tc.pid); got != tc.want {
			t.Errorf("%s: Owns(%q, %d) = %v, want %v", tc.name, tc.id, tc.pid, got, tc.want)
		}
	}
	r.lister.set(104, 100, old, 0, 0, "late child")
	if !r.s.Owns("a", 104) {
		t.Error("a child started after the last sample is not owned")
	}
	r.lister.scanErr = errScan
	if r.s.Owns("a", 100) {
		t.Error("Owns answered true while the listing fails")
	}
}

func TestKillRefusesForeignPid(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.lister.set(100, 1, r.clock.Now(), 0, 0, "bwrap")
	r.roots.set("a", 100)
	// The fake table does not contain this test process, so Kill must
	// refuse it; if it did not, the test binary would die.
	for _, pid := range []int{os.Getpid(), 0, -1} {
		err := r.s.Kill("a", pid)
		var refusal *NotOwnedError
		if !errors.As(err, &refusal) || refusal.Pid != pid || refusal.SandboxID != "a" {
			t.Fatalf("Kill(%d) = %v, want a *NotOwnedError", pid, err)
		}
		if !strings.Contains(err.Error(), "is not one of sandbox \"a\"'s processes") {
			t.Errorf("refusal says %q", err)
		}
	}
	r.lister.scanErr = errScan
	if err := r.s.Kill("a", os.Getpid()); !errors.Is(err, errScan) {
		t.Errorf("Kill with a failing listing = %v, want the listing error", err)
	}
}

func TestCommandLineTruncated(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ä", MaxCommandBytes) // two bytes per rune
	cases := []struct {
		name string
		argv []string
		want string
	}{
		{"joined", []string{"python3", "-c", "print(1)"}, "python3 -c print(1)"},
		{"empty", nil, ""},
	}
	for _, tc := range cases {
		if got := commandLine(tc.argv); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	got := commandLine([]string{"x", long})
	if len(got) > MaxCommandBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "x ää") {
		t.Errorf("long command: %d bytes, valid %v, %q...", len(got), utf8.ValidString(got), got[:10])
	}
}
