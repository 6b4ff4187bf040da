package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// PutSandbox saves a sandbox document under id.
func (s *Store) PutSandbox(id string, v any) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketSandboxes), id, v)
	})
}

// GetSandbox decodes the sandbox id into v, or returns ErrNotFound.
func (s *Store) GetSandbox(id string, v any) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bucketSandboxes), id, v)
	})
}

// DeleteSandbox removes the sandbox document. Its runs stay: the history of
// what ran is kept until pruned, also for deleted and one-shot sandboxes.
func (s *Store) DeleteSandbox(id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSandboxes)
		if b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		return b.Delete([]byte(id))
	})
}

// EachSandbox calls fn with every stored sandbox document.
func (s *Store) EachSandbox(fn func(data []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSandboxes).ForEach(func(_, v []byte) error { return fn(v) })
	})
}

// PutRun saves a run record. Run ids must sort in creation order (the
// engine makes them from the clock), because pruning drops the smallest.
// After the insert the history is cut back to MaxRuns.
func (s *Store) PutRun(id, sandboxID string, v any) error {
	return s.Write([]RunItem{{ID: id, SandboxID: sandboxID, Value: v}}, nil)
}

// RunItem is one run record to save.
type RunItem struct {
	ID, SandboxID string
	Value         any
}

// SandboxEdit changes a stored sandbox document in place.
type SandboxEdit func(data []byte) ([]byte, error)

// Write saves run records and applies sandbox edits in one transaction:
// one commit, one fsync, however many runs ended together. Edits of
// sandboxes that no longer exist are skipped.
func (s *Store) Write(runs []RunItem, edits map[string]SandboxEdit) error {
	return s.WriteWith(runs, edits, nil)
}

// AheadEdit records (Value) or forgets (nil) a sandbox made ahead
// (PutAhead, DeleteAhead), in the commit of WriteWith.
type AheadEdit struct {
	ID    string
	Value any
}

// WriteWith is Write, with the edits of the sandboxes made ahead in the
// same commit: a run that takes one and the one that replaces it cost
// the commit that records the run and nothing more.
func (s *Store) WriteWith(runs []RunItem, edits map[string]SandboxEdit, ahead []AheadEdit) error {
	aheadData := make([][]byte, len(ahead))
	for i, a := range ahead {
		if a.Value == nil {
			continue
		}
		data, err := json.Marshal(a.Value)
		if err != nil {
			return fmt.Errorf("encoding %q: %w", a.ID, err)
		}
		aheadData[i] = data
	}
	encoded := make([][]byte, len(runs))
	for i, r := range runs {
		data, err := json.Marshal(r.Value)
		if err != nil {
			return fmt.Errorf("encoding run %q: %w", r.ID, err)
		}
		encoded[i] = data
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if len(ahead) > 0 {
			b, err := tx.CreateBucketIfNotExists(bucketAhead)
			if err != nil {
				return err
			}
			for i, a := range ahead {
				if aheadData[i] == nil {
					err = b.Delete([]byte(a.ID))
				} else {
					err = b.Put([]byte(a.ID), aheadData[i])
				}
				if err != nil {
					return err
				}
			}
		}
		sandboxes := tx.Bucket(bucketSandboxes)
		for id, edit := range edits {
			old := sandboxes.Get([]byte(id))
			if old == nil {
				continue
			}
			data, err := edit(old)
			if err != nil {
				return err
			}
			if err := sandboxes.Put([]byte(id), data); err != nil {
				return err
			}
		}
		if len(runs) == 0 {
			return nil
		}
		bucket := tx.Bucket(bucketRuns)
		// Run ids sort by their start, so runs go in at the end: pages
		// split full rather than half full (bbolt's default, for keys
		// in any order) keep half as many pages, and every write reads
		// half as many entries on its way to the last page.
		bucket.FillPercent = 1
		index := tx.Bucket(bucketRunIndex)
		counted := runCount(tx)
		n := counted
		for i, r := range runs {
			if bucket.Get([]byte(r.ID)) == nil {
				n++
			}
			if err := bucket.Put([]byte(r.ID), encoded[i]); err != nil {
				return err
			}
			// A record saved again (a run's end after its start) is
			// in the index already: putting it again would rewrite
			// the index's pages for nothing.
			if r.SandboxID != "" && !indexed(index, r.SandboxID, r.ID) {
				idx, err := index.CreateBucketIfNotExists([]byte(r.SandboxID))
				if err != nil {
					return err
				}
				if err := idx.Put([]byte(r.ID), nil); err != nil {
					return err
				}
			}
		}
		return s.prune(tx, counted, n)
	})
}

// indexed reports whether run id is in sandboxID's index.
func indexed(index *bolt.Bucket, sandboxID, id string) bool {
	sb := index.Bucket([]byte(sandboxID))
	if sb == nil {
		return false
	}
	k, _ := sb.Cursor().Seek([]byte(id))
	return string(k) == id
}

// prune deletes the oldest runs beyond maxRuns, with their index entries,
// and saves the new count. n is the number of runs now stored, counted
// what runCount said before the writes: an unchanged count is not
// written again.
func (s *Store) prune(tx *bolt.Tx, counted, n int) error {
	runs := tx.Bucket(bucketRuns)
	extra := n - s.maxRuns
	if extra <= 0 {
		if n == counted {
			return nil
		}
		return writeRunCount(tx, n)
	}
	type victim struct{ id, sandbox string }
	var victims []victim
	c := runs.Cursor()
	for k, v := c.First(); k != nil && len(victims) < extra; k, v = c.Next() {
		var r struct {
			SandboxID string `json:"sandboxId"`
		}
		_ = json.Unmarshal(v, &r) // an undecodable record is still pruned
		victims = append(victims, victim{string(k), r.SandboxID})
	}
	idx := tx.Bucket(bucketRunIndex)
	for _, vv := range victims {
		if err := runs.Delete([]byte(vv.id)); err != nil {
			return err
		}
		// A pruned run takes its trace events along.
		if _, err := deleteRunEvents(tx, vv.id); err != nil {
			return err
		}
		if sb := idx.Bucket([]byte(vv.sandbox)); sb != nil {
			if err := sb.Delete([]byte(vv.id)); err != nil {
				return err
			}
			if sb.Stats().KeyN == 0 {
				if err := idx.DeleteBucket([]byte(vv.sandbox)); err != nil {
					return err
				}
			}
		}
	}
	return writeRunCount(tx, n-len(victims))
}

var keyRunCount = []byte("run_count")

// runCount is the number of stored runs, kept in meta so that pruning does
// not walk the whole bucket on every insert. A file without the counter
// (schema 1) gets it counted once.
func runCount(tx *bolt.Tx) int {
	if v := tx.Bucket(bucketMeta).Get(keyRunCount); len(v) == 8 {
		return int(binary.BigEndian.Uint64(v))
	}
	return tx.Bucket(bucketRuns).Stats().KeyN
}

func writeRunCount(tx *bolt.Tx, n int) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(n))
	return tx.Bucket(bucketMeta).Put(keyRunCount, buf[:])
}

// GetRun decodes the run id into v, or returns ErrNotFound.
func (s *Store) GetRun(id string, v any) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bucketRuns), id, v)
	})
}

// CountRuns returns how many run records are kept.
func (s *Store) CountRuns() (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = runCount(tx)
		return nil
	})
	return n, err
}

// ListRuns calls fn with up to limit run documents, newest first; only the
// runs of sandboxID when it is not empty. fn returning false stops early.
func (s *Store) ListRuns(sandboxID string, limit int, fn func(data []byte) bool) error {
	return s.db.View(func(tx *bolt.Tx) error {
		n := 0
		eachRun(tx, sandboxID, func(v []byte) bool {
			if limit > 0 && n >= limit {
				return false
			}
			n++
			return fn(v)
		})
		return nil
	})
}

// eachRun calls fn with the run documents, newest first, only sandboxID's
// when it is not empty, until fn returns false.
func eachRun(tx *bolt.Tx, sandboxID string, fn func(data []byte) bool) {
	runs := tx.Bucket(bucketRuns)
	var c *bolt.Cursor
	if sandboxID == "" {
		c = runs.Cursor()
	} else {
		sb := tx.Bucket(bucketRunIndex).Bucket([]byte(sandboxID))
		if sb == nil {
			return
		}
		c = sb.Cursor()
	}
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		if sandboxID != "" {
			if v = runs.Get(k); v == nil {
				continue
			}
		}
		if !fn(v) {
			return
		}
	}
}

// CountSandboxes returns how many sandboxes are stored.
func (s *Store) CountSandboxes() (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketSandboxes).Stats().KeyN
		return nil
	})
	return n, err
}

// PageRuns calls fn with run documents newest first, only sandboxID's when
// it is not empty, and only those match accepts (nil: all): skipping the
// first offset of them, then up to limit (0: no limit). It returns how
// many match in all.
func (s *Store) PageRuns(sandboxID string, match func(data []byte) bool, offset, limit int, fn func(data []byte)) (total int, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		// Every run, unfiltered: the count is kept, and the walk stops
		// at the end of the page.
		counted := match == nil && sandboxID == ""
		if counted {
			total = runCount(tx)
		}
		n := 0
		eachRun(tx, sandboxID, func(v []byte) bool {
			if match != nil && !match(v) {
				return true
			}
			if n >= offset && (limit <= 0 || n < offset+limit) {
				fn(v)
			}
			n++
			return !counted || limit <= 0 || n < offset+limit
		})
		if !counted {
			total = n
		}
		return nil
	})
	return total, err
}
