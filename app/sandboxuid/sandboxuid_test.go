package sandboxuid

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noSubordinates is a login.defs whose useradd gives new accounts no
// subordinate ranges: the tests that look at the files' own ids use it.
const noSubordinates = "SUB_UID_COUNT 0\nSUB_GID_COUNT\t0\n"

// system writes crafted account files into a temp dir; "" leaves a file
// out. Its login.defs is noSubordinates.
func system(t *testing.T, passwd, group, subuid, subgid string) System {
	t.Helper()
	return systemDefs(t, passwd, group, subuid, subgid, noSubordinates)
}

// systemDefs is system with a login.defs of its own ("" for none).
func systemDefs(t *testing.T, passwd, group, subuid, subgid, defs string) System {
	t.Helper()
	dir := t.TempDir()
	sys := System{Passwd: filepath.Join(dir, "passwd"), Group: filepath.Join(dir, "group"), Subuid: filepath.Join(dir, "subuid"), Subgid: filepath.Join(dir, "subgid"), LoginDefs: filepath.Join(dir, "login.defs"), Proc: filepath.Join(dir, "proc")}
	for path, text := range map[string]string{sys.Passwd: passwd, sys.Group: group, sys.Subuid: subuid, sys.Subgid: subgid, sys.LoginDefs: defs} {
		if text != "" {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sys
}

const debianPasswd = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nalice:x:1000:1000::/home/alice:/bin/bash\n"

// TestPickBlock: the default range is the first 65536-aligned block above
// every account id and subordinate range and above where useradd gives
// accounts made later theirs (login.defs, or its defaults without one),
// never nobody's, and one another engine claimed is passed over.
func TestPickBlock(t *testing.T) {
	t.Parallel()
	const none = "none"
	for _, tc := range []struct {
		name                          string
		passwd, group, subuid, subgid string
		defs                          string   // login.defs; "": noSubordinates, none: no file
		taken                         []uint32 // blocks' first uids claimed by others
		want                          string
		wantErr                       string
	}{
		{name: "no_subordinate_ranges", passwd: debianPasswd, want: "65536-131071"},
		{name: "useradd_default", passwd: debianPasswd, subuid: "alice:100000:65536\n", subgid: "alice:100000:65536\n", want: "196608-262143"},
		{name: "subgid_higher", passwd: debianPasswd, subuid: "alice:100000:65536\n", subgid: "bob:300000:10\n", want: "327680-393215"},
		{name: "group_higher", passwd: debianPasswd, group: "big:x:500000:\n", want: "524288-589823"},
		{name: "comments_and_junk", passwd: "# c\n\nroot:x:0:0::/:/bin/sh\nbad:x:nope:0::/:/bin/sh\nshort:x\n", subuid: "#x:1:2\nodd:abc:5\n", want: "65536-131071"},
		{name: "claimed_block_skipped", passwd: debianPasswd, subuid: "alice:100000:65536\n", taken: []uint32{196608}, want: "262144-327679"},
		{name: "old_nfsnobody_ignored_for_height", passwd: debianPasswd + "nfsnobody:x:4294967294:4294967294::/:/sbin/nologin\n", want: "65536-131071"},
		{name: "no_room", passwd: debianPasswd, subuid: "huge:65536:2147418112\n", wantErr: "no block"},
		// Debian's login.defs, and useradd's defaults without one: the
		// next account made gets 165536-231071, so the block is above
		// SUB_UID_MAX.
		{name: "debian_login_defs", passwd: debianPasswd, subuid: "alice:100000:65536\n", defs: "# c\nSUB_UID_MIN\t\t   100000\nSUB_UID_MAX\t\t600100000\nSUB_UID_COUNT\t\t    65536\n", want: "600113152-600178687"},
		{name: "no_login_defs", passwd: debianPasswd, defs: none, want: "600113152-600178687"},
		{name: "own_sub_uid_max", passwd: debianPasswd, defs: "SUB_UID_MAX 1000000\nSUB_GID_MAX 2000000\n", want: "2031616-2097151"},
		{name: "own_uid_max", passwd: debianPasswd, defs: noSubordinates + "UID_MAX 300000\n", want: "327680-393215"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defs := tc.defs
			switch defs {
			case "":
				defs = noSubordinates
			case none:
				defs = ""
			}
			taken, err := ReadTaken(systemDefs(t, tc.passwd, tc.group, tc.subuid, tc.subgid, defs))
			if err != nil {
				t.Fatal(err)
			}
			r, err := taken.PickBlock(func(r Range) bool {
				for _, b := range tc.taken {
					if r.First == b {
						return false
					}
				}
				return true
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("PickBlock = %v, %v; want an error with %q", r, err, tc.wantErr)
				}
				return
			}
			if err != nil || r.String() != tc.want {
				t.Fatalf("PickBlock = %v, %v; want %s", r, err, tc.want)
			}
			if r.Contains(Nobody) || r.Contains(0) {
				t.Fatalf("%v holds nobody or root", r)
			}
		})
	}
}

// TestReadTakenNeedsPasswd: without a passwd file nothing is known of the
// accounts, and the range is not guessed.
func TestReadTakenNeedsPasswd(t *testing.T) {
	t.Parallel()
	if _, err := ReadTaken(system(t, "", "", "", "")); err == nil {
		t.Fatal("ReadTaken without passwd: no error")
	}
}

// TestConflicts names what uses a range's ids.
func TestConflicts(t *testing.T) {
	t.Parallel()
	taken, err := ReadTaken(system(t, debianPasswd+"svc:x:200005:200005::/:/bin/false\n", "", "alice:100000:65536\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	got := taken.Conflicts(Range{150000, 250000})
	if len(got) != 2 || !strings.Contains(got[0], "alice's subordinate range 100000-165535") || !strings.Contains(got[1], "200005 (user svc") {
		t.Fatalf("Conflicts = %q", got)
	}
	if got := taken.Conflicts(Range{300000, 400000}); len(got) != 0 {
		t.Fatalf("Conflicts of a free range = %q", got)
	}
	if why := taken.Why(100001); !strings.Contains(why, "subordinate") {
		t.Fatalf("Why(100001) = %q", why)
	}
	if later := taken.Later(Range{196608, 262143}); later != "" {
		t.Fatalf("Later with a useradd that gives no subordinate ranges = %q", later)
	}
	taken, err = ReadTaken(systemDefs(t, debianPasswd, "", "", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if later := taken.Later(Range{196608, 262143}); !strings.Contains(later, "subordinate uid ranges, 100000-600100000 (SUB_UID_MIN and SUB_UID_MAX") {
		t.Fatalf("Later under useradd's defaults = %q", later)
	}
	if later := taken.Later(Range{600113152, 600178687}); later != "" {
		t.Fatalf("Later above SUB_UID_MAX = %q", later)
	}
}

// TestParseRange: the setting's forms and what it refuses.
func TestParseRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, wantErr string
		auto              bool
	}{
		{in: "auto", auto: true},
		{in: "", auto: true},
		{in: "1000000-1065535", want: "1000000-1065535"},
		{in: " 200000 - 200063 ", want: "200000-200063"},
		{in: "200000-200010", wantErr: "at least 64"},
		{in: "60000-70000", wantErr: "nobody"},
		{in: "0-100000", wantErr: "below 1000"},
		{in: "300-200", wantErr: "ends before"},
		{in: "2147483600-2147483700", wantErr: "past uid"},
		{in: "lots", wantErr: "not a uid range"},
		{in: "5:65536", wantErr: "not a uid range"},
	} {
		r, auto, err := ParseRange(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseRange(%q) = %v, %v; want an error with %q", tc.in, r, err, tc.wantErr)
			}
		case err != nil || auto != tc.auto || (!auto && r.String() != tc.want):
			t.Errorf("ParseRange(%q) = %v, %v, %v; want %s auto=%v", tc.in, r, auto, err, tc.want, tc.auto)
		}
	}
}

// TestPoolHandsOutEachUidOnce: no uid held is handed out again, none
// skipped nor the engine's own, a released one only after the others,
// and a pool made again from its mark starts past every uid handed out.
func TestPoolHandsOutEachUidOnce(t *testing.T) {
	t.Parallel()
	r := Range{First: 500000, Last: 500063}
	var marks []uint32
	p := NewPool(r, usedBy(map[uint32]string{500003: "pid 7"}), 0, func(m uint32) error { marks = append(marks, m); return nil })
	seen := map[uint32]bool{}
	for i := 0; i < 62; i++ {
		id, err := p.Take("s" + string(rune('a'+i)))
		if err != nil {
			t.Fatalf("Take %d: %v", i, err)
		}
		if seen[id] || id == r.First || id == 500003 || !r.Contains(id) {
			t.Fatalf("Take %d = %d (seen %v)", i, id, seen[id])
		}
		seen[id] = true
	}
	if _, err := p.Take("one-too-many"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Take of a full pool: %v", err)
	}
	p.Release(500010, "not-its-holder")
	if p.Holder(500010) == "" {
		t.Fatal("a release by another sandbox let the uid go")
	}
	p.Release(500010, p.Holder(500010))
	if id, err := p.Take("again"); err != nil || id != 500010 {
		t.Fatalf("Take after a release = %d, %v", id, err)
	}
	if len(marks) == 0 {
		t.Fatal("no mark was recorded")
	}

	q := NewPool(Range{First: 600000, Last: 700000}, nil, 0, func(m uint32) error { marks = append(marks, m); return nil })
	var last uint32
	for i := 0; i < 3000; i++ {
		last, _ = q.Take("x")
	}
	again := NewPool(q.Range(), nil, marks[len(marks)-1], nil)
	if id, _ := again.Take("y"); id <= last {
		t.Fatalf("a pool made again from its mark handed out %d, not past %d", id, last)
	}
}

// TestPoolWaitsForALeftProcess: a uid let go is handed out again only
// once a listing of the processes made after it was let go shows none
// runs as it (what its sandbox left behind); uids never let go need no
// listing, and one listing serves every uid let go before it.
func TestPoolWaitsForALeftProcess(t *testing.T) {
	t.Parallel()
	r := Range{First: 500000, Last: 500063}
	p := NewPool(r, nil, 0, nil)
	procs, listings := map[uint32]int{}, 0
	p.ListProcesses(func() (map[uint32]int, error) {
		listings++
		return maps.Clone(procs), nil
	})
	var ids []uint32
	for i := range r.Size() - 1 {
		id, err := p.Take(fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if listings != 0 {
		t.Fatalf("%d listings for uids never let go", listings)
	}
	left := ids[5]
	procs[left] = 4242 // what sandbox 5 left behind
	p.Release(left, "5")
	if id, err := p.Take("new"); err == nil {
		t.Fatalf("uid %d, let go with a process of its sandbox still running, went to a new sandbox", id)
	}
	delete(procs, left)
	if id, err := p.Take("new"); err != nil || id != left {
		t.Fatalf("once the process is gone: %d, %v; want %d", id, err, left)
	}
	n := listings
	p.Release(ids[6], "6")
	p.Release(ids[7], "7")
	for _, want := range []uint32{ids[6], ids[7]} {
		if id, err := p.Take("again"); err != nil || id != want {
			t.Fatalf("Take = %d, %v; want %d", id, err, want)
		}
	}
	if listings != n+1 {
		t.Fatalf("%d listings for two uids let go before one; want 1", listings-n)
	}
}

// TestPoolHold: a stored sandbox keeps its uid unless it is not its own.
func TestPoolHold(t *testing.T) {
	t.Parallel()
	p := NewPool(Range{First: 500000, Last: 500063}, usedBy(map[uint32]string{500005: "pid 9 (sshd)"}), 0, nil)
	for _, tc := range []struct {
		id   uint32
		ok   bool
		want string
	}{
		{500001, true, ""}, {500001, false, "sandbox a's"}, {500000, false, "engine's own"},
		{499999, false, "outside"}, {500005, false, "pid 9"},
	} {
		ok, why := p.Hold(tc.id, map[bool]string{true: "a", false: "b"}[tc.ok])
		if ok != tc.ok || !strings.Contains(why, tc.want) {
			t.Errorf("Hold(%d) = %v, %q; want %v, %q", tc.id, ok, why, tc.ok, tc.want)
		}
	}
	if id, _ := p.Take("c"); id != 500002 {
		t.Fatalf("Take after Hold = %d, want 500002", id)
	}
}

// TestClaimRange: a block claimed by one engine is refused to another,
// in this process too, saying who holds it; the claim lasts once the
// engine stops (its sandboxes keep their uids), and the block is free
// again only once its owner gives it up or its data dir is gone. Free
// says the same and changes nothing.
func TestClaimRange(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "claims")
	dataA, dataB, dataC := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	for _, d := range []string{dataA, dataB, dataC} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	claimed := func(err error, first uint32, by ...string) {
		t.Helper()
		var ce *ClaimedError
		if !errors.As(err, &ce) || ce.Range.First != first {
			t.Fatalf("want block %d claimed, got %v", first, err)
		}
		for _, s := range by {
			if !strings.Contains(ce.By, s) {
				t.Fatalf("%v does not say %q", err, s)
			}
		}
	}
	a, err := ClaimRange(dir, Range{First: 196608, Last: 262143}, dataA)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ClaimRange(dir, Range{First: 250000, Last: 300000}, dataB)
	claimed(err, 196608, dataA, "runs now")
	if by := Free(dir, Range{First: 196608, Last: 196700}, dataB); !strings.Contains(by, dataA) {
		t.Fatalf("Free of a running engine's block = %q", by)
	}
	c, err := ClaimRange(dir, Range{First: 262144, Last: 262207}, dataC)
	if err != nil {
		t.Fatalf("a claim of the next block: %v", err)
	}
	c.Release()
	a.Release()
	// Stopped engines keep their blocks.
	_, err = ClaimRange(dir, Range{First: 250000, Last: 300000}, dataB)
	claimed(err, 196608, dataA, "stopped")
	if by := Free(dir, Range{First: 262144, Last: 262207}, dataB); !strings.Contains(by, dataC) {
		t.Fatalf("Free of a stopped engine's block = %q", by)
	}
	if by := Free(dir, Range{First: 262144, Last: 262207}, dataC); by != "" {
		t.Fatalf("Free of its own block = %q", by)
	}
	a, err = ClaimRange(dir, Range{First: 196608, Last: 262143}, dataA)
	if err != nil {
		t.Fatalf("an engine claiming its own block again: %v", err)
	}
	a.Release()
	// Given up, or its engine's data dir gone: free.
	if err := Forget(dir, Range{First: 196608, Last: 262143}, dataB); err != nil {
		t.Fatal(err)
	}
	claimed(freeErr(dir, Range{First: 196608, Last: 262143}, dataB), 196608, dataA) // another's Forget changes nothing
	if err := Forget(dir, Range{First: 196608, Last: 262143}, dataA); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dataC); err != nil {
		t.Fatal(err)
	}
	b, err := ClaimRange(dir, Range{First: 250000, Last: 300000}, dataB)
	if err != nil {
		t.Fatalf("a claim once the first is given up and the second's data dir is gone: %v", err)
	}
	b.Release()
	_, err = ClaimRange(dir, Range{First: 196608, Last: 196700}, dataA)
	claimed(err, 196608, dataB)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimRange(dir, Range{First: 196608, Last: 262143}, dataA); err == nil || !strings.Contains(err.Error(), "only it may write") {
		t.Fatalf("a claim in a folder others may write: %v", err)
	}
}

// freeErr is Free as an error, for claimed.
func freeErr(dir string, r Range, who string) error {
	if by := Free(dir, r, who); by != "" {
		return &ClaimedError{Range: Range{First: r.First / BlockSize * BlockSize}, By: by}
	}
	return nil
}

// TestProcessIDs reads the uids and gids of a proc tree's live
// processes (a zombie runs nothing).
func TestProcessIDs(t *testing.T) {
	t.Parallel()
	proc := t.TempDir()
	for pid, status := range map[string]string{
		"1":    "Name:\tinit\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n",
		"42":   "Name:\tsvc\nUid:\t1000\t200001\t1000\t200001\nGid:\t200002\t200002\t200002\t200002\n",
		"self": "Uid:\t5\t5\t5\t5\n",
		"77":   "Name:\tbwrap\nState:\tZ (zombie)\nUid:\t300000\t300000\t300000\t300000\n",
	} {
		os.MkdirAll(filepath.Join(proc, pid), 0o755)
		os.WriteFile(filepath.Join(proc, pid, "status"), []byte(status), 0o644)
	}
	ids, err := ProcessIDs(proc)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{0, 1000, 200001, 200002} {
		if _, ok := ids[id]; !ok {
			t.Errorf("uid %d missing: %v", id, ids)
		}
	}
	if ids[200001] != 42 || len(ids) != 4 {
		t.Fatalf("ProcessIDs = %v", ids)
	}
}

func usedBy(m map[uint32]string) func(uint32) string {
	return func(id uint32) string { return m[id] }
}

// BenchmarkPoolTakeRelease is what a one-shot run adds for its uid: one
// Take and one Release, with most of a block held.
func BenchmarkPoolTakeRelease(b *testing.B) {
	p := NewPool(Range{First: 196608, Last: 262143}, func(uint32) string { return "" }, 0, func(uint32) error { return nil })
	for i := 0; i < 500; i++ {
		p.Take("held")
	}
	for b.Loop() {
		id, err := p.Take("run")
		if err != nil {
			b.Fatal(err)
		}
		p.Release(id, "run")
	}
}
