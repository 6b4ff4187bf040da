package store

import (
	"fmt"
	bolt "go.etcd.io/bbolt"
	"path/filepath"
	"strings"
	"testing"
)

func putEvents(t *testing.T, s *Store, runID string, n int) {
	t.Helper()
	var evs [][]byte
	for i := 0; i < n; i++ {
		evs = append(evs, []byte(fmt.Sprintf("%s-%d", runID, i)))
	}
	if err := s.PutEvents(runID, evs); err != nil {
		t.Fatal(err)
	}
}

func runEvents(t *testing.T, s *Store, runID string) string {
	t.Helper()
	var got []string
	if err := s.ListEvents(runID, func(d []byte) bool { got = append(got, string(d)); return true }); err != nil {
		t.Fatal(err)
	}
	return strings.Join(got, ",")
}

func TestEventsAreListedNewestFirstAndPrunedWithTheirRuns(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{MaxRuns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"r01", "r02"} {
		if err := s.PutRun(id, "a", run{id, "a"}); err != nil {
			t.Fatal(err)
		}
	}
	putEvents(t, s, "r01", 3)
	putEvents(t, s, "r02", 2)
	// A longer id that starts with another run's id is a different run.
	putEvents(t, s, "r01x", 1)
	if got := runEvents(t, s, "r01"); got != "r01-2,r01-1,r01-0" {
		t.Fatalf("events of r01 = %q", got)
	}
	var all []string
	_ = s.ListAllEvents("a", func(run string, d []byte) bool { all = append(all, string(d)); return len(all) < 4 })
	if got := strings.Join(all, ","); got != "r02-1,r02-0,r01-2,r01-1" {
		t.Fatalf("events of sandbox a = %q", got)
	}
	// r03 pushes r01 out of the history, and its events with it.
	if err := s.PutRun("r03", "a", run{"r03", "a"}); err != nil {
		t.Fatal(err)
	}
	if got := runEvents(t, s, "r01"); got != "" {
		t.Fatalf("events of a pruned run survive: %q", got)
	}
	if got := runEvents(t, s, "r01x"); got != "r01x-0" {
		t.Fatalf("pruning r01 touched r01x: %q", got)
	}
	n, err := s.ClearEvents("a")
	if err != nil || n != 2 || runEvents(t, s, "r02") != "" {
		t.Fatalf("clear = %d, %v; left %q", n, err, runEvents(t, s, "r02"))
	}
}

func TestMigrationFromSchema2AddsTheEventsBucket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v2.db")
	writeOld(t, path, 2, nil, "meta", "settings", "sandboxes", "runs", "runs_by_sandbox")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != CurrentSchema {
		t.Fatalf("schema = %d", v)
	}
	putEvents(t, s, "r1", 1)
	if got := runEvents(t, s, "r1"); got != "r1-0" {
		t.Fatalf("events after migration = %q", got)
	}
}

// TestEventsHaveATotalBudget: the events of all runs together stay under
// MaxEventBytes, the oldest runs' going first; a run whose events were
// deleted (pruned, cleared) no longer counts.
func TestEventsHaveATotalBudget(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{MaxEventBytes: 10000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := func(run string) {
		t.Helper()
		var evs [][]byte
		for i := 0; i < 3; i++ {
			evs = append(evs, []byte(strings.Repeat("x", 1000)))
		}
		if err := s.PutEvents(run, evs); err != nil {
			t.Fatal(err)
		}
	}
	count := func(run string) int {
		n := 0
		_ = s.ListEvents(run, func([]byte) bool { n++; return true })
		return n
	}
	for _, r := range []string{"r1", "r2", "r3", "r4", "r5"} {
		big(r)
	}
	if count("r1") != 0 || count("r2") != 0 || count("r3") != 3 || count("r5") != 3 {
		t.Fatalf("after five runs of 3000 bytes with a budget of 10000: %d %d %d %d %d", count("r1"), count("r2"), count("r3"), count("r4"), count("r5"))
	}
	// Storing a run's events again replaces them: nothing else goes.
	big("r5")
	if count("r3") != 3 {
		t.Fatalf("storing r5 again evicted r3")
	}
	var total int64
	_ = s.db.View(func(tx *bolt.Tx) error { total = eventBytes(tx); return nil })
	if total != 9000 {
		t.Fatalf("the counter says %d bytes, want 9000", total)
	}
}
