package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Buckets of the principals (schema versions 6 to 8): agent and tenant
// tokens, tenants, and the security events.
var (
	// bucketTokens holds one document per token, by its id: its name,
	// kind, tenant, the SHA-256 of its secret (never the secret).
	bucketTokens = []byte("tokens")
	// bucketTenants holds one document per tenant, by its slug.
	bucketTenants = []byte("tenants")
	// bucketSecurity holds the security events, by an id that sorts by
	// time, so the bucket's end is the newest and pruning takes the
	// first keys.
	bucketSecurity = []byte("security_events")
)

// DefaultMaxSecurityEvents bounds the security events kept; past it the
// oldest go first, as the runs do.
const DefaultMaxSecurityEvents = 10000

func migrateTokens(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketTokens)
	return err
}

func migrateTenants(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketTenants)
	return err
}

func migrateSecurity(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists(bucketSecurity)
	return err
}

// Docs is one bucket of JSON documents by id (tokens, tenants), for the
// capabilities above the engine that own the documents' shape.
type Docs struct {
	s      *Store
	bucket []byte
}

// Tokens are the agent and tenant tokens' documents.
func (s *Store) Tokens() Docs { return Docs{s, bucketTokens} }

// Tenants are the tenants' documents.
func (s *Store) Tenants() Docs { return Docs{s, bucketTenants} }

// Put saves v under id.
func (d Docs) Put(id string, v any) error {
	return d.s.db.Update(func(tx *bolt.Tx) error { return putJSON(tx.Bucket(d.bucket), id, v) })
}

// Get decodes id into v, or returns ErrNotFound.
func (d Docs) Get(id string, v any) error {
	return d.s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(d.bucket), id, v) })
}

// Delete removes id, or returns ErrNotFound.
func (d Docs) Delete(id string) error {
	return d.s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(d.bucket)
		if b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		return b.Delete([]byte(id))
	})
}

// Each calls fn with every document, in id order.
func (d Docs) Each(fn func(data []byte) error) error {
	return d.s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(d.bucket)
		if b == nil {
			return fmt.Errorf("the store has no %s bucket", d.bucket)
		}
		return b.ForEach(func(_, v []byte) error { return fn(v) })
	})
}

// SecurityItem is one security event to save.
type SecurityItem struct {
	ID   string
	Data []byte
}

// PutSecurityEvents saves events in one commit and cuts the bucket back
// to max (DefaultMaxSecurityEvents when 0), the oldest first.
func (s *Store) PutSecurityEvents(events []SecurityItem, max int) error {
	if max <= 0 {
		max = DefaultMaxSecurityEvents
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSecurity)
		n := securityCount(tx)
		for _, ev := range events {
			if b.Get([]byte(ev.ID)) == nil {
				n++
			}
			if err := b.Put([]byte(ev.ID), ev.Data); err != nil {
				return err
			}
		}
		if n > max {
			c := b.Cursor()
			var drop [][]byte
			for k, _ := c.First(); k != nil && n-len(drop) > max; k, _ = c.Next() {
				drop = append(drop, bytes.Clone(k))
			}
			for _, k := range drop {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			n -= len(drop)
		}
		return writeSecurityCount(tx, n)
	})
}

var keySecurityCount = []byte("security_events_count")

// securityCount is how many security events are stored, kept in meta so
// that a write does not walk the bucket; a file without it is walked once.
func securityCount(tx *bolt.Tx) int {
	if v := tx.Bucket(bucketMeta).Get(keySecurityCount); len(v) == 8 {
		return int(binary.BigEndian.Uint64(v))
	}
	return tx.Bucket(bucketSecurity).Stats().KeyN
}

func writeSecurityCount(tx *bolt.Tx, n int) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(max(n, 0)))
	return tx.Bucket(bucketMeta).Put(keySecurityCount, buf[:])
}

// EachSecurityEvent calls fn with the stored security events, newest
// first, starting before the id before ("" for the newest); fn returning
// false stops.
func (s *Store) EachSecurityEvent(before string, fn func(id string, data []byte) bool) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSecurity).Cursor()
		var k, v []byte
		if before == "" {
			k, v = c.Last()
		} else if k, _ = c.Seek([]byte(before)); k == nil {
			k, v = c.Last() // every stored id is older than before
		} else {
			k, v = c.Prev()
		}
		for ; k != nil; k, v = c.Prev() {
			if !fn(string(k), v) {
				return nil
			}
		}
		return nil
	})
}
