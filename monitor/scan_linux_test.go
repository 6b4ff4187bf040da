package monitor

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	boot := time.Unix(1_700_000_000, 0)
	tail := " S 42 77 77 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 12345 1000 100 18446744073709551615\n"
	cases := []struct {
		name string
		line string
		ok   bool
	}{
		{"plain", "123 (sleep)" + tail, true},
		{"spaces_and_parens", "123 (a) (b c)" + tail, true},
		{"truncated", "123 (sleep) S 42 77", false},
		{"no_paren", "123 sleep S 42", false},
		{"zombie", "123 (sleep) Z" + tail[2:], false},
		{"twenty_fields_only", "123 (sleep) S 42 77 77 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 12345", true},
		{"nineteen_fields", "123 (sleep) S 42 77 77 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0", false},
	}
	for _, tc := range cases {
		ref, ok := parseStat(123, []byte(tc.line), boot)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		want := ProcRef{Pid: 123, PPid: 42, Pgid: 77, CreateTime: boot.Add(123450 * time.Millisecond)}
		if ok && ref != want {
			t.Errorf("%s: %+v, want %+v", tc.name, ref, want)
		}
	}
}

// TestParseStatAllocatesNothing: the sampler parses every process's
// line at each tick. (Not parallel: AllocsPerRun counts the process's.)
func TestParseStatAllocatesNothing(t *testing.T) {
	line := []byte("123 (sleep) S 42 77 77 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 12345 1000 100 18446744073709551615\n")
	boot := time.Unix(1_700_000_000, 0)
	if n := testing.AllocsPerRun(100, func() { parseStat(123, line, boot) }); n != 0 {
		t.Errorf("parseStat allocated %.0f times a line, want none", n)
	}
}

// TestHostScanFindsSelf checks the real /proc scan against this process and
// that a process's CreateTime is the same in every scan (it identifies it).
func TestHostScanFindsSelf(t *testing.T) {
	t.Parallel()
	h := NewHostLister()
	find := func() ProcRef {
		refs, err := h.Scan(context.Background())
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		for _, r := range refs {
			if r.Pid == os.Getpid() {
				return r
			}
		}
		t.Fatal("Scan did not list this process")
		return ProcRef{}
	}
	a, b := find(), find()
	if a.PPid != os.Getppid() || a.Pgid == 0 {
		t.Errorf("self: %+v, want ppid %d and a group", a, os.Getppid())
	}
	if !a.CreateTime.Equal(b.CreateTime) {
		t.Errorf("CreateTime moved between scans: %v then %v", a.CreateTime, b.CreateTime)
	}
	// The child is made between before and started; on a loaded machine
	// Start may return long after the fork.
	cmd := exec.Command("sleep", "10")
	before := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	started := time.Now()
	refs, err := h.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if r.Pid == cmd.Process.Pid {
			if r.CreateTime.Before(before.Add(-100*time.Millisecond)) || r.CreateTime.After(started.Add(100*time.Millisecond)) {
				t.Errorf("child CreateTime %v, want between %v and %v (100 ms either side)", r.CreateTime, before, started)
			}
		}
	}
	if age := time.Since(a.CreateTime); age < 0 || age > time.Hour {
		t.Errorf("CreateTime %v is %v ago; want about when this test started", a.CreateTime, age)
	}
}
