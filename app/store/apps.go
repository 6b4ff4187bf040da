package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketApps holds one document per Space App (schema version 4 and
// later): its registration, its sandbox configuration, and the facts of
// its last launch, so that launch counts and what the running process got
// survive the engine's restarts.
var bucketApps = []byte("space_apps")

// migrateApps adds the space_apps bucket.
func migrateApps(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketApps)
	return err
}

// PutApp saves a Space App's document under id.
func (s *Store) PutApp(id string, v any) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketApps), id, v)
	})
}

// GetApp decodes the Space App id into v, or returns ErrNotFound.
func (s *Store) GetApp(id string, v any) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bucketApps), id, v)
	})
}

// DeleteApp removes the Space App's document.
func (s *Store) DeleteApp(id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketApps)
		if b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		return b.Delete([]byte(id))
	})
}

// EachApp calls fn with every Space App's document.
func (s *Store) EachApp(fn func(data []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketApps)
		if b == nil {
			return fmt.Errorf("the store has no %s bucket", bucketApps)
		}
		return b.ForEach(func(_, v []byte) error { return fn(v) })
	})
}
