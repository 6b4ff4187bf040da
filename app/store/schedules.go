package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketSchedules holds one document per schedule: what it
// runs and when, and what the scheduler keeps of its firings. The
// scheduler (app/scheduler) owns the documents' shape.
var bucketSchedules = []byte("schedules")

// migrateSchedules adds the schedules bucket. It is a step of its own so
// that it can take whichever schema number comes next.
func migrateSchedules(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketSchedules)
	return err
}

// PutSchedule saves a schedule's document under id.
func (s *Store) PutSchedule(id string, v any) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketSchedules), id, v)
	})
}

// GetSchedule decodes the schedule id into v, or returns ErrNotFound.
func (s *Store) GetSchedule(id string, v any) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bucketSchedules), id, v)
	})
}

// EditSchedule changes the stored document of id in one transaction, so
// that two writers (the user's update, the scheduler's record of a
// firing) never lose each other's change. It returns ErrNotFound for an
// unknown id.
func (s *Store) EditSchedule(id string, edit func(data []byte) ([]byte, error)) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSchedules)
		old := b.Get([]byte(id))
		if old == nil {
			return ErrNotFound
		}
		data, err := edit(old)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), data)
	})
}

// DeleteSchedule removes the schedule's document.
func (s *Store) DeleteSchedule(id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSchedules)
		if b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		return b.Delete([]byte(id))
	})
}

// EachSchedule calls fn with every schedule's document.
func (s *Store) EachSchedule(fn func(data []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSchedules)
		if b == nil {
			return fmt.Errorf("the store has no %s bucket", bucketSchedules)
		}
		return b.ForEach(func(_, v []byte) error { return fn(v) })
	})
}
