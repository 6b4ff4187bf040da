package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Salvaged says what Repair copied out of a damaged store, bucket by
// bucket.
type Salvaged struct {
	// Kept is where the damaged file now is (it is never removed).
	Kept string `json:"kept"`
	// Buckets maps a bucket to how many records were copied and lost.
	Buckets map[string]BucketSalvage `json:"buckets"`
}

// BucketSalvage counts one bucket's records.
type BucketSalvage struct {
	Copied int `json:"copied"`
	// Lost counts the records that were there but not readable JSON;
	// a bucket whose pages could not be walked to the end says so in
	// Error (what follows the break is lost uncounted).
	Lost  int    `json:"lost"`
	Error string `json:"error,omitempty"`
}

// salvageable are the buckets Repair copies, their values JSON documents.
// meta is rebuilt (schema version, run count), runs_by_sandbox made again
// from the runs.
func salvageable() [][]byte {
	return [][]byte{bucketSettings, bucketSandboxes, bucketRuns, bucketEvents, bucketSchedules, bucketApps, bucketTokens, bucketTenants, bucketSecurity}
}

// Repair copies what can be read of the damaged store at path (read from
// from, a copy of it that nothing holds open: the one DamagedError kept)
// into a new file, moves the damaged file aside to path.before-repair-TIME
// and puts the new one at path. The new file is a whole database of the
// current schema; Open it as usual.
func Repair(path, from string) (*Salvaged, error) {
	tmp := path + ".repair"
	_ = os.Remove(tmp)
	out, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("creating the new store: %w", err)
	}
	res := &Salvaged{Buckets: map[string]BucketSalvage{}}
	err = out.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketSettings, bucketSandboxes, bucketRuns, bucketRunIndex, bucketEvents, bucketSchedules, bucketApps, bucketTokens, bucketTenants, bucketSecurity} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		if err := salvageInto(from, tx, res); err != nil {
			return err
		}
		if err := migrateRunIndex(tx); err != nil {
			return err
		}
		if err := writeRunCount(tx, res.Buckets[string(bucketRuns)].Copied); err != nil {
			return err
		}
		return writeVersion(tx, CurrentSchema)
	})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("writing the new store: %w", err)
	}
	res.Kept, err = moveAside(path)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("putting the new store in place: %w", err)
	}
	return res, nil
}

// salvageInto walks every bucket of the file from that it can and puts
// what reads as JSON into tx. A bucket whose walk panics keeps what was
// read before.
func salvageInto(from string, tx *bolt.Tx, res *Salvaged) error {
	var src *bolt.DB
	reason, err := guard(func() (err error) {
		src, err = bolt.Open(from, 0o400, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		return err
	})
	if reason != "" || err != nil {
		if reason == "" {
			reason = err.Error()
		}
		return fmt.Errorf("the damaged store cannot be opened even to read (%s); nothing can be salvaged: move %s away to start with an empty store", reason, from)
	}
	defer src.Close()
	return src.View(func(stx *bolt.Tx) error {
		for _, name := range salvageable() {
			bs, err := salvageBucket(stx.Bucket(name), tx.Bucket(name))
			if err != nil {
				return err
			}
			res.Buckets[string(name)] = bs
		}
		return nil
	})
}

// salvageBucket copies src's JSON records into dst: forwards until a page
// breaks the walk, then backwards from the end to there, so that one bad
// leaf loses only what is on it (and between it and another bad one).
func salvageBucket(src, dst *bolt.Bucket) (BucketSalvage, error) {
	bs := BucketSalvage{}
	if src == nil {
		return bs, nil
	}
	var putErr error
	put := func(k, v []byte) bool {
		if v == nil || !json.Valid(v) {
			bs.Lost++
			return true
		}
		if putErr = dst.Put(append([]byte{}, k...), append([]byte{}, v...)); putErr != nil {
			return false
		}
		bs.Copied++
		return true
	}
	var last []byte
	reason, _ := guard(func() error {
		c := src.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if !put(k, v) {
				break
			}
			last = append(last[:0], k...)
		}
		return nil
	})
	if reason != "" && putErr == nil {
		bs.Error = reason
		guard(func() error {
			c := src.Cursor()
			for k, v := c.Last(); k != nil && (last == nil || bytes.Compare(k, last) > 0); k, v = c.Prev() {
				if !put(k, v) {
					break
				}
			}
			return nil
		})
	}
	return bs, putErr
}

// moveAside renames path to path.before-repair-TIME, a name not taken.
func moveAside(path string) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i := 0; i < 100; i++ {
		kept := path + ".before-repair-" + stamp
		if i > 0 {
			kept += fmt.Sprintf("-%d", i)
		}
		// Link, not rename: it fails rather than replace what is there.
		err := os.Link(path, kept)
		if err == nil {
			return kept, os.Remove(path)
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("keeping the damaged store aside: %w", err)
		}
	}
	return "", fmt.Errorf("keeping the damaged store aside: every name like %s is taken", filepath.Base(path)+".before-repair-"+stamp)
}
