package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// CurrentSchema is the schema version this code writes.
//
// History:
//   - 1: meta, settings, sandboxes, runs.
//   - 2: runs_by_sandbox, an index of run ids per sandbox, so a sandbox's
//     history and its deletion do not scan every run.
//   - 3: events, the trace events of runs.
//   - 4: schedules, one document per schedule.
//   - 5: space_apps, one document per Space App.
//   - 6: tokens, the agent and tenant tokens (hashed).
//   - 7: tenants, one document per tenant.
//   - 8: security_events, the refusals and degraded guarantees.
const CurrentSchema = 8

// maxPlausibleSchema bounds the versions a newer engine could have
// written; a larger one is a damaged value, not the future.
const maxPlausibleSchema = 1 << 16

// versionDamage is migrate's answer for a version value no engine wrote.
type versionDamage string

func (d versionDamage) Error() string { return string(d) }

// migrations[v] upgrades a file from version v to v+1, inside one
// transaction together with the version bump.
var migrations = map[int]func(tx *bolt.Tx) error{
	1: migrateRunIndex,
	2: migrateEvents,    // events.go
	3: migrateSchedules, // schedules.go
	4: migrateApps,      // apps.go
	5: migrateTokens,    // principals.go
	6: migrateTenants,   // principals.go
	7: migrateSecurity,  // principals.go
}

// clipKey is k for a message: at most 32 bytes.
func clipKey(k []byte) []byte {
	if len(k) > 32 {
		return k[:32]
	}
	return k
}

func readVersion(tx *bolt.Tx) int {
	b := tx.Bucket(bucketMeta)
	if b == nil {
		return 0
	}
	v := b.Get(keySchemaVersion)
	if len(v) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(v))
}

func writeVersion(tx *bolt.Tx, v int) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(v))
	return tx.Bucket(bucketMeta).Put(keySchemaVersion, buf[:])
}

// migrate brings the file to CurrentSchema. A new file is created at the
// current version directly; a file from a newer engine is refused rather
// than misread.
func (s *Store) migrate() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		v := readVersion(tx)
		if v == 0 && tx.Bucket(bucketMeta) == nil {
			// A new file holds nothing; one that holds buckets but not
			// the meta bucket lost it (a damaged root page), and is not
			// made again over what is left.
			if k, _ := tx.Cursor().First(); k != nil {
				return versionDamage(fmt.Sprintf("the meta bucket is missing, but the store holds %q and more: its root is damaged", clipKey(k)))
			}
			for _, name := range [][]byte{bucketMeta, bucketSettings, bucketSandboxes, bucketRuns, bucketRunIndex, bucketEvents, bucketSchedules, bucketApps, bucketTokens, bucketTenants, bucketSecurity} {
				if _, err := tx.CreateBucket(name); err != nil {
					return fmt.Errorf("creating bucket %s: %w", name, err)
				}
			}
			return writeVersion(tx, CurrentSchema)
		}
		if raw := tx.Bucket(bucketMeta).Get(keySchemaVersion); len(raw) != 8 || v < 1 || binary.BigEndian.Uint64(raw) > maxPlausibleSchema {
			// No engine wrote this: versions count up one a change from
			// 1, written with the meta bucket (none, or 0, is zeroed).
			if raw == nil {
				return versionDamage("the schema version is missing from the meta bucket, which no engine writes")
			}
			return versionDamage(fmt.Sprintf("the schema version reads %x, which no engine writes", raw))
		}
		if v > CurrentSchema {
			return fmt.Errorf("the database is schema version %d, newer than this engine's %d: upgrade senclaw", v, CurrentSchema)
		}
		for ; v < CurrentSchema; v++ {
			step, ok := migrations[v]
			if !ok {
				return fmt.Errorf("no migration from schema version %d", v)
			}
			if err := step(tx); err != nil {
				return fmt.Errorf("migrating schema %d to %d: %w", v, v+1, err)
			}
			if err := writeVersion(tx, v+1); err != nil {
				return err
			}
		}
		return nil
	})
}

// migrateRunIndex builds runs_by_sandbox from the runs bucket.
func migrateRunIndex(tx *bolt.Tx) error {
	index, err := tx.CreateBucketIfNotExists(bucketRunIndex)
	if err != nil {
		return err
	}
	runs := tx.Bucket(bucketRuns)
	if runs == nil {
		return nil
	}
	return runs.ForEach(func(k, v []byte) error {
		var r struct {
			SandboxID string `json:"sandboxId"`
		}
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("run %s: %w", k, err)
		}
		if r.SandboxID == "" {
			return nil
		}
		sb, err := index.CreateBucketIfNotExists([]byte(r.SandboxID))
		if err != nil {
			return err
		}
		return sb.Put(k, nil)
	})
}
