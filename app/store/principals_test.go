package store

import (
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestMigrationFromSchema5AddsThePrincipalsBuckets opens a file as
// schema 5 left it (no tokens, tenants or security events) with a
// schedule in it: the migrations add the three buckets, keep the
// schedule, and tokens, tenants and events can be stored and read.
func TestMigrationFromSchema5AddsThePrincipalsBuckets(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v5.db")
	writeOld(t, path, 5, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("schedules")).Put([]byte("n1"), []byte(`{"schedule":{"id":"n1"}}`))
	}, "meta", "settings", "sandboxes", "runs", "runs_by_sandbox", "events", "schedules", "space_apps")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != CurrentSchema || CurrentSchema != 8 {
		t.Fatalf("schema = %d, want %d (8)", v, CurrentSchema)
	}
	var sched map[string]any
	if err := s.GetSchedule("n1", &sched); err != nil {
		t.Fatalf("the schedule did not survive the migration: %v", err)
	}
	for _, docs := range []Docs{s.Tokens(), s.Tenants()} {
		if err := docs.Put("a", map[string]string{"name": "a"}); err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		if err := docs.Get("a", &got); err != nil || got["name"] != "a" {
			t.Fatalf("%s: %v %v", docs.bucket, got, err)
		}
		if err := docs.Delete("a"); err != nil || docs.Delete("a") != ErrNotFound {
			t.Fatalf("%s: delete: %v", docs.bucket, err)
		}
	}
	var items []SecurityItem
	for i := range 7 {
		items = append(items, SecurityItem{ID: fmt.Sprintf("e%03d", i), Data: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	if err := s.PutSecurityEvents(items, 5); err != nil {
		t.Fatal(err)
	}
	var ids []string
	_ = s.EachSecurityEvent("", func(id string, _ []byte) bool { ids = append(ids, id); return true })
	if fmt.Sprint(ids) != "[e006 e005 e004 e003 e002]" {
		t.Fatalf("kept, newest first: %v (want the 5 newest)", ids)
	}
	ids = nil
	_ = s.EachSecurityEvent("e004", func(id string, _ []byte) bool { ids = append(ids, id); return len(ids) < 2 })
	if fmt.Sprint(ids) != "[e003 e002]" {
		t.Fatalf("before e004: %v", ids)
	}
}
