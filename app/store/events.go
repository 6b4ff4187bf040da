package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketEvents holds the trace events of runs (schema version 3 and
// later). A key is the run id followed by an 8-byte big-endian sequence
// number, so one run's events are contiguous, in order, and pruned with a
// prefix scan; run ids sort by time, so the bucket's end is the newest.
var bucketEvents = []byte("events")

func eventKey(runID string, seq uint64) []byte {
	k := make([]byte, len(runID)+8)
	copy(k, runID)
	binary.BigEndian.PutUint64(k[len(runID):], seq)
	return k
}

// ofRun reports whether k is an event key of runID (a prefix match alone
// would also take a longer id that starts with runID).
func ofRun(k []byte, runID string) bool {
	return len(k) == len(runID)+8 && bytes.HasPrefix(k, []byte(runID))
}

// PutEvents stores a run's events (JSON documents) in order, replacing
// any it had.
func (s *Store) PutEvents(runID string, events [][]byte) error {
	if runID == "" {
		return fmt.Errorf("storing events: no run id")
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		if _, err := deleteRunEvents(tx, runID); err != nil {
			return err
		}
		total := eventBytes(tx)
		for i, ev := range events {
			if err := b.Put(eventKey(runID, uint64(i)), ev); err != nil {
				return err
			}
			total += int64(len(ev))
		}
		// Past the budget the oldest runs' events go (keys sort by run
		// id, and run ids by time), this run's last.
		for total > s.maxEventBytes {
			k, _ := b.Cursor().First()
			if len(k) <= 8 {
				break
			}
			oldest := string(k[:len(k)-8])
			freed, err := runEventBytes(b, oldest)
			if err != nil {
				return err
			}
			if _, err := deleteRunEvents(tx, oldest); err != nil {
				return err
			}
			total -= freed
			if oldest == runID {
				break
			}
		}
		return writeEventBytes(tx, total)
	})
}

var keyEventBytes = []byte("event_bytes")

// eventBytes is the size of every run's stored events, kept in meta so
// that a run's store does not walk the bucket; a file without the counter
// is walked once.
func eventBytes(tx *bolt.Tx) int64 {
	if v := tx.Bucket(bucketMeta).Get(keyEventBytes); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	var n int64
	_ = tx.Bucket(bucketEvents).ForEach(func(_, v []byte) error {
		n += int64(len(v))
		return nil
	})
	return n
}

func writeEventBytes(tx *bolt.Tx, n int64) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(max(n, 0)))
	return tx.Bucket(bucketMeta).Put(keyEventBytes, buf[:])
}

// runEventBytes is the size of runID's stored events.
func runEventBytes(b *bolt.Bucket, runID string) (int64, error) {
	var n int64
	c := b.Cursor()
	for k, v := c.Seek([]byte(runID)); k != nil && bytes.HasPrefix(k, []byte(runID)); k, v = c.Next() {
		if ofRun(k, runID) {
			n += int64(len(v))
		}
	}
	return n, nil
}

// deleteRunEvents removes the events of runID, keeps the size counter
// right, and says how many there were.
func deleteRunEvents(tx *bolt.Tx, runID string) (int, error) {
	b := tx.Bucket(bucketEvents)
	if b == nil {
		return 0, nil
	}
	total := eventBytes(tx)
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.Seek([]byte(runID)); k != nil && bytes.HasPrefix(k, []byte(runID)); k, v = c.Next() {
		if ofRun(k, runID) {
			keys = append(keys, bytes.Clone(k))
			total -= int64(len(v))
		}
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	if len(keys) == 0 {
		return 0, nil
	}
	return len(keys), writeEventBytes(tx, total)
}

// ListEvents calls fn with the events of runID, newest first; fn returning
// false stops.
func (s *Store) ListEvents(runID string, fn func(data []byte) bool) error {
	return s.db.View(func(tx *bolt.Tx) error {
		_ = eachRunEvent(tx.Bucket(bucketEvents), runID, fn)
		return nil
	})
}

// eachRunEvent walks runID's events backwards; it returns false when fn
// asked to stop.
func eachRunEvent(b *bolt.Bucket, runID string, fn func(data []byte) bool) bool {
	c := b.Cursor()
	k, v := c.Seek(eventKey(runID, ^uint64(0)))
	switch {
	case k == nil:
		k, v = c.Last()
	case !ofRun(k, runID):
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, []byte(runID)); k, v = c.Prev() {
		if ofRun(k, runID) && !fn(v) {
			return false
		}
	}
	return true
}

// ListAllEvents calls fn with events of every run, or of sandboxID's runs
// when it is not empty, newest run first and newest event first within a
// run. fn returning false stops.
func (s *Store) ListAllEvents(sandboxID string, fn func(runID string, data []byte) bool) error {
	return s.db.View(func(tx *bolt.Tx) error {
		events := tx.Bucket(bucketEvents)
		if sandboxID == "" {
			c := events.Cursor()
			for k, v := c.Last(); k != nil; k, v = c.Prev() {
				if len(k) > 8 && !fn(string(k[:len(k)-8]), v) {
					return nil
				}
			}
			return nil
		}
		idx := tx.Bucket(bucketRunIndex).Bucket([]byte(sandboxID))
		if idx == nil {
			return nil
		}
		c := idx.Cursor()
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			runID := string(k)
			if !eachRunEvent(events, runID, func(v []byte) bool { return fn(runID, v) }) {
				return nil
			}
		}
		return nil
	})
}

// ClearEvents deletes the events of every run of sandboxID and returns
// how many were deleted.
func (s *Store) ClearEvents(sandboxID string) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketRunIndex).Bucket([]byte(sandboxID))
		if idx == nil {
			return nil
		}
		var runs []string
		_ = idx.ForEach(func(k, _ []byte) error {
			runs = append(runs, string(k))
			return nil
		})
		for _, r := range runs {
			d, err := deleteRunEvents(tx, r)
			if err != nil {
				return err
			}
			n += d
		}
		return nil
	})
	return n, err
}

// migrateEvents creates the events bucket (schema 2 to 3).
func migrateEvents(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketEvents)
	return err
}
