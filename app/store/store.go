// Package store keeps the engine's state in one bbolt file.
//
// It holds settings, sandboxes, runs, trace events, Space Apps and a schema
// version. Only the engine opens it (bbolt allows one writer); everything
// else asks the engine.
//
// Values are JSON documents keyed by id. The store knows the buckets and
// their invariants (run pruning, the per-sandbox run index) but not the
// engine's types, so it stays below the engine in the import graph.
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bucket names. They are part of the file format: never rename one without
// a migration.
var (
	bucketMeta      = []byte("meta")
	bucketSettings  = []byte("settings")
	bucketSandboxes = []byte("sandboxes")
	bucketRuns      = []byte("runs")
	// bucketRunIndex holds, per sandbox id, a nested bucket of run ids
	// (schema version 2 and later).
	bucketRunIndex = []byte("runs_by_sandbox")
)

var keySchemaVersion = []byte("schema_version")

// ErrNotFound is returned when an id is not in the store.
var ErrNotFound = errors.New("not found")

// ErrLocked is returned by Open when another engine has the database open.
var ErrLocked = errors.New("another senclaw engine has the database open")

// DefaultMaxRuns is how many run records are kept when Options.MaxRuns is 0.
const DefaultMaxRuns = 5000

// Options configure Open.
type Options struct {
	// MaxRuns bounds the run history; the oldest runs are pruned first.
	MaxRuns int
	// MaxEventBytes bounds the trace events of all runs together; past
	// it the oldest runs' events go first. Zero is DefaultMaxEventBytes.
	MaxEventBytes int64
	// Timeout is how long Open waits for the file lock (another engine
	// holding it). Zero means 1 second.
	Timeout time.Duration
}

// DefaultMaxEventBytes is Options.MaxEventBytes's default: 5000 traced
// runs of 5000 events of up to 4 KiB each would otherwise be 100 GB.
const DefaultMaxEventBytes = 256 << 20

// Store is an open database.
type Store struct {
	db            *bolt.DB
	maxRuns       int
	maxEventBytes int64
}

// Open opens (creating if needed) the database at path and migrates it to
// the current schema. An existing file is checked first: a damaged one is
// a *DamagedError (with a copy kept aside), never a crash.
func Open(path string, opts Options) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the data dir: %w", err)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = time.Second
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		reason, err := verify(path, timeout)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			return nil, damaged(path, reason)
		}
	}
	var db *bolt.DB
	reason, err := guard(func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
		return err
	})
	if reason != "" {
		return nil, damaged(path, reason)
	}
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("opening %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s := &Store{db: db, maxRuns: opts.MaxRuns, maxEventBytes: opts.MaxEventBytes}
	if s.maxRuns <= 0 {
		s.maxRuns = DefaultMaxRuns
	}
	if s.maxEventBytes <= 0 {
		s.maxEventBytes = DefaultMaxEventBytes
	}
	reason, err = guard(s.migrate)
	if vd := versionDamage(""); errors.As(err, &vd) {
		reason = string(vd)
	}
	if reason != "" || err != nil {
		db.Close()
		if reason != "" {
			return nil, damaged(path, "migrating: "+reason)
		}
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Path is the database file.
func (s *Store) Path() string { return s.db.Path() }

// SchemaVersion reads the stored schema version.
func (s *Store) SchemaVersion() (int, error) {
	var v int
	err := s.db.View(func(tx *bolt.Tx) error {
		v = readVersion(tx)
		return nil
	})
	return v, err
}

// GetSetting decodes the setting key into v. It returns ErrNotFound when the
// key was never saved, so callers can apply defaults.
func (s *Store) GetSetting(key string, v any) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bucketSettings), key, v)
	})
}

// PutSetting saves v under key.
func (s *Store) PutSetting(key string, v any) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketSettings), key, v)
	})
}

func getJSON(b *bolt.Bucket, key string, v any) error {
	data := b.Get([]byte(key))
	if data == nil {
		return ErrNotFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decoding %q: %w", key, err)
	}
	return nil
}

func putJSON(b *bolt.Bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %q: %w", key, err)
	}
	return b.Put([]byte(key), data)
}
