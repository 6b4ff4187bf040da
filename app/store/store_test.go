package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

type run struct {
	ID        string `json:"id"`
	SandboxID string `json:"sandboxId"`
}

func listIDs(t *testing.T, s *Store, sandbox string, limit int) []string {
	t.Helper()
	var ids []string
	err := s.ListRuns(sandbox, limit, func(data []byte) bool {
		var r run
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestRunsArePrunedOldestFirst(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{MaxRuns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 1; i <= 5; i++ {
		sb := "a"
		if i%2 == 0 {
			sb = "b"
		}
		id := fmt.Sprintf("r%02d", i)
		if err := s.PutRun(id, sb, run{id, sb}); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(listIDs(t, s, "", 0), ","); got != "r05,r04,r03" {
		t.Fatalf("kept runs = %s, want r05,r04,r03", got)
	}
	if got := strings.Join(listIDs(t, s, "a", 0), ","); got != "r05,r03" {
		t.Fatalf("runs of a = %s", got)
	}
	if got := strings.Join(listIDs(t, s, "b", 0), ","); got != "r04" {
		t.Fatalf("runs of b = %s", got)
	}
	if n, _ := s.CountRuns(); n != 3 {
		t.Fatalf("count = %d", n)
	}
	// Updating an existing run does not count it twice.
	if err := s.PutRun("r05", "a", run{"r05", "a"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.CountRuns(); n != 3 {
		t.Fatalf("count after update = %d", n)
	}
	if got := strings.Join(listIDs(t, s, "a", 0), ","); got != "r05,r03" {
		t.Fatalf("runs of a after an update = %s", got)
	}
	if got := listIDs(t, s, "", 1); len(got) != 1 || got[0] != "r05" {
		t.Fatalf("limit 1 = %v", got)
	}
}

// writeV1 makes a file the way schema 1 wrote it: no run index, no counter.
func writeV1(t *testing.T, path string, runs []run) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"meta", "settings", "sandboxes", "runs"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], 1)
		if err := tx.Bucket([]byte("meta")).Put([]byte("schema_version"), v[:]); err != nil {
			return err
		}
		for _, r := range runs {
			data, _ := json.Marshal(r)
			if err := tx.Bucket([]byte("runs")).Put([]byte(r.ID), data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

func TestMigrationFromSchema1BuildsTheRunIndex(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "old.db")
	writeV1(t, path, []run{{"r1", "x"}, {"r2", "y"}, {"r3", "x"}})
	s, err := Open(path, Options{MaxRuns: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != CurrentSchema {
		t.Fatalf("schema = %d, want %d", v, CurrentSchema)
	}
	if got := strings.Join(listIDs(t, s, "x", 0), ","); got != "r3,r1" {
		t.Fatalf("runs of x after migration = %q", got)
	}
	if n, _ := s.CountRuns(); n != 3 {
		t.Fatalf("count = %d", n)
	}
}

func TestANewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error { return writeVersion(tx, CurrentSchema+1) })
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this engine") {
		t.Fatalf("err = %v, want a refusal naming the newer schema", err)
	}
}

func TestASecondOpenSaysTheLockIsHeld(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(path, Options{Timeout: 50e6})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("err = %v", err)
	}
}

func TestSettingsAndSandboxes(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v map[string]int
	if err := s.GetSetting("app", &v); err != ErrNotFound {
		t.Fatalf("missing setting: %v", err)
	}
	if err := s.PutSetting("app", map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.GetSetting("app", &v); err != nil || v["a"] != 1 {
		t.Fatalf("got %v %v", v, err)
	}
	if err := s.PutSandbox("s1", map[string]string{"id": "s1"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = s.EachSandbox(func([]byte) error { n++; return nil })
	if n != 1 {
		t.Fatalf("sandboxes = %d", n)
	}
	if err := s.DeleteSandbox("s1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSandbox("s1"); err != ErrNotFound {
		t.Fatalf("second delete: %v", err)
	}
}

// writeOld makes a file the way schema version wrote it: buckets, then
// fill (if any) in the same transaction.
func writeOld(t *testing.T, path string, version int, fill func(*bolt.Tx) error, buckets ...string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range buckets {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		if fill != nil {
			if err := fill(tx); err != nil {
				return err
			}
		}
		return writeVersion(tx, version)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMigrationFromSchema3AddsTheAppsBucket opens a file as schema 3 left
// it (no space_apps bucket) with a sandbox in it: the migration adds the
// bucket, keeps the sandbox, and apps can be stored and listed.
func TestMigrationFromSchema3AddsTheAppsBucket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v3.db")
	writeOld(t, path, 3, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("sandboxes")).Put([]byte("s1"), []byte(`{"id":"s1"}`))
	}, "meta", "settings", "sandboxes", "runs", "runs_by_sandbox", "events")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != CurrentSchema {
		t.Fatalf("schema = %d, want %d", v, CurrentSchema)
	}
	var sb map[string]string
	if err := s.GetSandbox("s1", &sb); err != nil || sb["id"] != "s1" {
		t.Fatalf("the sandbox did not survive the migration: %v %v", sb, err)
	}
	if err := s.PutApp("notes", map[string]int{"launches": 4}); err != nil {
		t.Fatal(err)
	}
	var app map[string]int
	if err := s.GetApp("notes", &app); err != nil || app["launches"] != 4 {
		t.Fatalf("app = %v %v", app, err)
	}
	n := 0
	if err := s.EachApp(func([]byte) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("apps listed: %d %v", n, err)
	}
	if err := s.DeleteApp("notes"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteApp("notes"); err != ErrNotFound {
		t.Fatalf("second delete: %v", err)
	}
}

// TestAVersionOfANewerEngineIsUpgrade: up to the largest plausible
// version, a version above this engine's says to upgrade, not damage.
func TestAVersionOfANewerEngineIsUpgrade(t *testing.T) {
	t.Parallel()
	for _, v := range []uint64{CurrentSchema + 1, maxPlausibleSchema} {
		path := filepath.Join(t.TempDir(), "newer.db")
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		raw := binary.BigEndian.AppendUint64(nil, v)
		err = s.db.Update(func(tx *bolt.Tx) error {
			if raw == nil { // missing
				return tx.Bucket(bucketMeta).Delete(keySchemaVersion)
			}
			return tx.Bucket(bucketMeta).Put(keySchemaVersion, raw)
		})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		_, err = Open(path, Options{})
		var de *DamagedError
		if err == nil || errors.As(err, &de) || !strings.Contains(err.Error(), "upgrade senclaw") {
			t.Fatalf("version %d: %v", v, err)
		}
	}
}

// TestAVersionNoEngineWroteIsDamage: a schema version that no engine
// could have written (a garbled value) is damage, with a copy kept, not
// "upgrade senclaw" (a zeroed one said "no migration from schema
// version 0", not damage, and kept no copy).
func TestAVersionNoEngineWroteIsDamage(t *testing.T) {
	t.Parallel()
	for _, raw := range [][]byte{{0, 0xab, 0, 0, 0, 0, 0, 5}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {1, 2, 3}, {0, 0, 0, 0, 0, 0, 1, 0, 1}, {0, 0, 0, 0, 0, 1, 0, 1}, {0, 0, 0, 0, 0, 0, 0, 0}, nil} {
		path := filepath.Join(t.TempDir(), "garbled.db")
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchemaVersion, raw) })
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		_, err = Open(path, Options{})
		var de *DamagedError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "which no engine writes") {
			t.Fatalf("version %x: %v", raw, err)
		}
	}
}

// Runs go in at the end of their bucket, which keeps its pages full:
// half-full pages (bbolt's split for keys in any order) would double
// what every run's write reads.
func TestRunPagesAreFilled(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type fat struct {
		run
		Stdout string `json:"stdout"`
	}
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("r%04d", i)
		if err := s.PutRun(id, "sb", fat{run{id, "sb"}, strings.Repeat("x", 300)}); err != nil {
			t.Fatal(err)
		}
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket(bucketRuns).Stats()
		fill := float64(st.LeafInuse) / float64(st.LeafAlloc)
		if fill < 0.8 {
			t.Errorf("the runs' leaf pages are %.0f%% full (%d pages), want at least 80%%", fill*100, st.LeafPageN)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
