package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

const pageSize = 4096

// filledStore makes a closed store with n runs (and their index) at path.
func filledStore(t *testing.T, path string, n int) {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("r%05d", i)
		sb := fmt.Sprintf("sb%d", i%7)
		if err := s.PutRun(id, sb, run{id, sb}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutSetting("app", map[string]int{"maxSandboxes": 9}); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// metaRoot reads the root bucket's page of the current meta page (the one
// with the higher txid): offsets of bbolt's meta after the page header.
func metaRoot(t *testing.T, data []byte) uint64 {
	t.Helper()
	var root, txid uint64
	for p := 0; p < 2; p++ {
		m := data[p*pageSize+16:]
		if tx := binary.LittleEndian.Uint64(m[48:]); tx >= txid {
			txid, root = tx, binary.LittleEndian.Uint64(m[16:])
		}
	}
	return root
}

// damage rewrites path through edit.
func damage(t *testing.T, path string, edit func(data []byte)) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(data)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestADamagedStoreIsSaidNotCrashedOn: each of its stores made the engine
// panic or fault in bbolt (the whole daemon died) before stores were
// checked.
func TestADamagedStoreIsSaidNotCrashedOn(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(15))
	cases := []struct {
		name string
		edit func(t *testing.T, data []byte)
	}{
		{"garbage_after_the_meta_pages", func(t *testing.T, data []byte) {
			rng.Read(data[2*pageSize:]) // "invalid freelist page" on open
		}},
		{"garbage_root_leaf", func(t *testing.T, data []byte) {
			root := metaRoot(t, data)
			rng.Read(data[root*pageSize+16 : (root+1)*pageSize]) // the migration's version read faulted
		}},
		{"root_points_past_the_file", func(t *testing.T, data []byte) {
			for p := 0; p < 2; p++ {
				binary.LittleEndian.PutUint64(data[p*pageSize+32:], 1<<40)
			}
		}},
		{"not_a_database", func(t *testing.T, data []byte) { rng.Read(data) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "senclaw.db")
			filledStore(t, path, 300)
			bad := damage(t, path, func(d []byte) { tc.edit(t, d) })
			s, err := Open(path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("a damaged store opened")
			}
			var de *DamagedError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a DamagedError", err)
			}
			if !strings.HasPrefix(err.Error(), "store damaged: ") || !strings.Contains(err.Error(), "senclaw doctor --repair") {
				t.Fatalf("err = %q", err)
			}
			kept, rerr := os.ReadFile(de.Kept)
			if rerr != nil || !bytes.Equal(kept, bad) {
				t.Fatalf("the copy kept aside (%q, %v) is not the damaged file", de.Kept, rerr)
			}
			// Opening it again keeps the same copy, and never overwrites it.
			_, err = Open(path, Options{})
			if !errors.As(err, &de) || de.Kept != path+".damaged-"+de.Kept[len(path)+len(".damaged-"):] {
				t.Fatalf("second open: %v", err)
			}
			copies, _ := filepath.Glob(path + ".damaged-*")
			if len(copies) != 1 {
				t.Fatalf("copies kept = %v, want one", copies)
			}
			if still, _ := os.ReadFile(path); !bytes.Equal(still, bad) {
				t.Fatal("opening a damaged store changed it")
			}
		})
	}
}

func TestRepairCopiesWhatCanBeRead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "senclaw.db")
	filledStore(t, path, 2000)
	// Garbage in the leaf of the runs in the middle: its runs are lost,
	// the settings and the runs before and after it are not.
	damage(t, path, func(d []byte) {
		root := metaRoot(t, d)
		for p := 2; p < len(d)/pageSize; p++ {
			page := d[p*pageSize : (p+1)*pageSize]
			leaf := binary.LittleEndian.Uint16(page[8:]) == 0x02
			if uint64(p) != root && leaf && bytes.Contains(page, []byte(`"r01000"`)) {
				rand.New(rand.NewSource(int64(p))).Read(page[16:])
				return
			}
		}
		t.Fatal("no leaf of runs found to damage")
	})
	_, err := Open(path, Options{})
	var de *DamagedError
	if !errors.As(err, &de) {
		t.Fatalf("open: %v", err)
	}
	res, err := Repair(path, de.Kept)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(res.Kept); err != nil || !strings.Contains(res.Kept, ".before-repair-") {
		t.Fatalf("the damaged store was not kept: %q %v", res.Kept, err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("the repaired store does not open: %v", err)
	}
	defer s.Close()
	if p := s.Check(); len(p) != 0 {
		t.Fatalf("the repaired store fails its check: %v", p)
	}
	var set map[string]int
	t.Logf("salvaged %+v", res.Buckets)
	if err := s.GetSetting("app", &set); err != nil || set["maxSandboxes"] != 9 {
		t.Fatalf("settings after repair = %v, %v", set, err)
	}
	n, _ := s.CountRuns()
	runs := res.Buckets["runs"]
	if n != runs.Copied || n < 1000 || n >= 2000 {
		t.Fatalf("runs after repair = %d, salvage says %+v", n, runs)
	}
	// The index is made again from the runs that are left.
	if ids := listIDs(t, s, "sb3", 0); len(ids) == 0 || len(ids) > n {
		t.Fatalf("index of sb3 = %d runs", len(ids))
	}
	t.Logf("salvaged %+v", res.Buckets)
}

func TestAWholeStorePassesItsCheck(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "senclaw.db")
	filledStore(t, path, 500)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p := s.Check(); len(p) != 0 {
		t.Fatalf("check = %v", p)
	}
	if copies, _ := filepath.Glob(path + ".damaged-*"); len(copies) != 0 {
		t.Fatalf("a whole store was copied aside: %v", copies)
	}
}

// TestOpenSurvivesRandomDamage garbles a store in many ways (whole pages,
// their starts, a few bytes anywhere, the leaves of one bucket): Open
// must answer every one, whole or damaged, and never fault. A fault in
// bbolt's own check goroutine cannot be recovered and kills the process,
// which fails this test.
func TestOpenSurvivesRandomDamage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	filledStore(t, orig, 2000)
	clean, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	pages := len(clean) / pageSize
	rng := rand.New(rand.NewSource(1501))
	damagedN := 0
	for i := 0; i < 300; i++ {
		b := append([]byte{}, clean...)
		for k := 0; k < 1+i%4; k++ {
			p := 2 + rng.Intn(pages-2)
			page := b[p*pageSize : (p+1)*pageSize]
			switch i % 4 {
			case 0:
				rng.Read(page)
			case 1:
				rng.Read(page[:16+rng.Intn(64)])
			case 2:
				o := rng.Intn(pageSize - 8)
				rng.Read(page[o : o+1+rng.Intn(8)])
			case 3:
				rng.Read(page[16:]) // a page's elements, its header kept
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("t%d.db", i))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, Options{})
		var de *DamagedError
		switch {
		case err == nil:
			s.Close()
		case errors.As(err, &de):
			damagedN++
			os.Remove(de.Kept)
		default:
			t.Fatalf("variant %d: %v", i, err)
		}
		os.Remove(path)
	}
	if damagedN < 100 {
		t.Fatalf("only %d of 300 garbled stores were found damaged", damagedN)
	}
}

// TestAStoreThatLostItsMetaBucketIsDamaged: a root page that lost the
// meta bucket but kept the others (one variant of random damage seen in
// TestOpenSurvivesRandomDamage) is damage, not a new file to make the
// buckets in again (which failed with "bucket already exists").
func TestAStoreThatLostItsMetaBucketIsDamaged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lost-meta.db")
	filledStore(t, path, 10)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketMeta) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(path, Options{})
	var de *DamagedError
	if !errors.As(err, &de) || !strings.Contains(de.Reason, "meta bucket is missing") {
		t.Fatalf("Open of a store without its meta bucket: %v, want a DamagedError that says so", err)
	}
	os.Remove(de.Kept)
}
