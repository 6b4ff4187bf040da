package store

import (
	"encoding/json"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestMigrationAddsTheSchedulesBucket opens a file as schema 3 left it (no
// schedules bucket) with a sandbox and a run in it: the migrations bring
// it to the current schema, the old documents survive, and schedules can
// be stored, edited, listed and deleted. It starts from schema 3, not
// from "the version before mine", so it holds whatever number the
// schedules step takes.
func TestMigrationAddsTheSchedulesBucket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v3.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"meta", "settings", "sandboxes", "runs", "runs_by_sandbox", "events"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		if err := tx.Bucket([]byte("sandboxes")).Put([]byte("s1"), []byte(`{"id":"s1"}`)); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("runs")).Put([]byte("r1"), []byte(`{"id":"r1","sandboxId":"s1"}`)); err != nil {
			return err
		}
		return writeVersion(tx, 3)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
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
	var r run
	if err := s.GetRun("r1", &r); err != nil || r.SandboxID != "s1" {
		t.Fatalf("the run did not survive the migration: %+v %v", r, err)
	}

	if err := s.PutSchedule("n1", map[string]any{"id": "n1", "fired": 0}); err != nil {
		t.Fatal(err)
	}
	bump := func(data []byte) ([]byte, error) {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		m["fired"] = m["fired"].(float64) + 1
		return json.Marshal(m)
	}
	if err := s.EditSchedule("n1", bump); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := s.GetSchedule("n1", &got); err != nil || got["fired"] != 1.0 {
		t.Fatalf("schedule after an edit = %v %v", got, err)
	}
	if err := s.EditSchedule("nope", bump); err != ErrNotFound {
		t.Fatalf("editing an unknown schedule: %v", err)
	}
	n := 0
	if err := s.EachSchedule(func([]byte) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("schedules listed: %d %v", n, err)
	}
	if err := s.DeleteSchedule("n1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSchedule("n1"); err != ErrNotFound {
		t.Fatalf("second delete: %v", err)
	}
}
