package store

import (
	bolt "go.etcd.io/bbolt"
)

// bucketAhead holds the one-shot sandboxes the engine made ahead of their
// runs, by sandbox id: written (synced) before anything of one exists and
// removed once it is gone, so that an engine that dies leaves what its
// next start removes (as runs' records do, for what no run record names
// yet). Made at the first Put; an older store simply has none.
var bucketAhead = []byte("ahead")

// PutAhead records v under a made-ahead sandbox's id.
func (s *Store) PutAhead(id string, v any) error {
	return s.WriteWith(nil, nil, []AheadEdit{{ID: id, Value: v}})
}

// DeleteAhead forgets a made-ahead sandbox that is gone.
func (s *Store) DeleteAhead(id string) error {
	return s.WriteWith(nil, nil, []AheadEdit{{ID: id}})
}

// EachAhead calls fn with each made-ahead sandbox's id and record.
func (s *Store) EachAhead(fn func(id string, data []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAhead)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error { return fn(string(k), v) })
	})
}
