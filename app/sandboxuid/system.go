package sandboxuid

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// System names the files the engine learns the system's ids from; tests
// give crafted ones.
type System struct {
	Passwd, Group  string
	Subuid, Subgid string
	// LoginDefs is useradd's settings, which say where it gives new
	// accounts their uids and subordinate ranges.
	LoginDefs string
	// Proc is the proc file system, whose processes' uids and gids are
	// in use.
	Proc string
}

// Host is this machine's System.
func Host() System {
	return System{Passwd: "/etc/passwd", Group: "/etc/group", Subuid: "/etc/subuid", Subgid: "/etc/subgid", LoginDefs: "/etc/login.defs", Proc: "/proc"}
}

// span is a range of ids something on the system uses.
type span struct {
	r    Range
	what string
}

// Taken is what the system's files say is in use: account ids (users'
// uids, groups' gids, both kept together since a sandbox's gid is its uid)
// and subordinate ranges.
type Taken struct {
	ids  map[uint32]string
	subs []span
	// highest is the largest id in use below 2^31 (an id such as
	// 4294967294, an old nfsnobody, is kept out of it: no range fits
	// above it).
	highest uint32
	// later are where useradd gives accounts made later their uids, gids
	// and subordinate ranges (/etc/login.defs): free today, but not a
	// place for a range that must stay the engine's.
	later []span
}

// useradd's defaults, where login.defs does not say.
var loginDefaults = map[string]uint64{
	"UID_MIN": 1000, "UID_MAX": 60000, "GID_MIN": 1000, "GID_MAX": 60000,
	"SUB_UID_MIN": 100000, "SUB_UID_MAX": 600100000, "SUB_UID_COUNT": 65536,
	"SUB_GID_MIN": 100000, "SUB_GID_MAX": 600100000, "SUB_GID_COUNT": 65536,
}

// ReadTaken reads passwd, group, subuid and subgid. passwd must be
// there; the others may be missing (no groups file is odd, no
// subordinate ranges common).
func ReadTaken(sys System) (*Taken, error) {
	t := &Taken{ids: map[uint32]string{}}
	for _, f := range []struct {
		path, kind string
		must       bool
	}{{sys.Passwd, "user", true}, {sys.Group, "group", false}} {
		err := eachLine(f.path, func(fields []string) {
			if len(fields) < 3 {
				return
			}
			if id, err := strconv.ParseUint(fields[2], 10, 32); err == nil {
				t.add(uint32(id), fmt.Sprintf("%s %s in %s", f.kind, fields[0], f.path))
			}
		})
		if err != nil && (f.must || !errors.Is(err, fs.ErrNotExist)) {
			return nil, err
		}
	}
	for _, path := range []string{sys.Subuid, sys.Subgid} {
		err := eachLine(path, func(fields []string) {
			if len(fields) < 3 {
				return
			}
			first, err1 := strconv.ParseUint(fields[1], 10, 32)
			count, err2 := strconv.ParseUint(fields[2], 10, 32)
			if err1 != nil || err2 != nil || count == 0 || first+count-1 > 1<<32-1 {
				return
			}
			r := Range{First: uint32(first), Last: uint32(first + count - 1)}
			t.subs = append(t.subs, span{r, fmt.Sprintf("%s's subordinate range %s in %s", fields[0], r, path)})
			if r.Last <= maxID {
				t.highest = max(t.highest, r.Last)
			}
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	defs, err := readLoginDefs(sys.LoginDefs)
	if err != nil {
		return nil, err
	}
	for _, z := range []struct{ min, max, count, what string }{
		{"UID_MIN", "UID_MAX", "", "new accounts' uids"},
		{"GID_MIN", "GID_MAX", "", "new groups' gids"},
		{"SUB_UID_MIN", "SUB_UID_MAX", "SUB_UID_COUNT", "new accounts' subordinate uid ranges"},
		{"SUB_GID_MIN", "SUB_GID_MAX", "SUB_GID_COUNT", "new accounts' subordinate gid ranges"},
	} {
		lo, hi := defs[z.min], min(defs[z.max], maxID)
		if lo > hi || (z.count != "" && defs[z.count] == 0) {
			continue // useradd gives none
		}
		r := Range{First: uint32(lo), Last: uint32(hi)}
		t.later = append(t.later, span{r, fmt.Sprintf("useradd's place for %s, %s (%s and %s in %s)", z.what, r, z.min, z.max, sys.LoginDefs)})
	}
	return t, nil
}

// readLoginDefs reads the numbers useradd places ids by from path (a
// missing file, or a key it lacks, is useradd's default).
func readLoginDefs(path string) (map[string]uint64, error) {
	defs := maps.Clone(loginDefaults)
	if path == "" {
		return defs, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return defs, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.Join(strings.Fields(sc.Text()), " "), " ")
		if _, known := loginDefaults[k]; !ok || !known {
			continue
		}
		if n, err := strconv.ParseUint(v, 10, 32); err == nil {
			defs[k] = n
		}
	}
	return defs, sc.Err()
}

// Later says where useradd would give ids of r to accounts made later
// ("" for nowhere): a range there is taken from the engine the day one is.
func (t *Taken) Later(r Range) string {
	var out []string
	for _, z := range t.later {
		if z.r.overlaps(r) {
			out = append(out, z.what)
		}
	}
	return strings.Join(out, "; ")
}

func (t *Taken) add(id uint32, what string) {
	if _, ok := t.ids[id]; !ok {
		t.ids[id] = what
	}
	if id <= maxID {
		t.highest = max(t.highest, id)
	}
}

// Why says what uses id ("" when nothing the files name does).
func (t *Taken) Why(id uint32) string {
	if w, ok := t.ids[id]; ok {
		return w
	}
	for _, s := range t.subs {
		if s.r.Contains(id) {
			return s.what
		}
	}
	return ""
}

// Conflicts lists what uses ids of r: accounts (at most a few named) and
// every subordinate range that overlaps it.
func (t *Taken) Conflicts(r Range) []string {
	var out []string
	for _, s := range t.subs {
		if s.r.overlaps(r) {
			out = append(out, s.what)
		}
	}
	n := 0
	for id, what := range t.ids {
		if r.Contains(id) {
			n++
			if n <= 3 {
				out = append(out, fmt.Sprintf("%d (%s)", id, what))
			}
		}
	}
	if n > 3 {
		out = append(out, fmt.Sprintf("and %d more accounts", n-3))
	}
	return out
}

// eachLine calls fn with the colon-separated fields of each line of path
// that is not a comment.
func eachLine(path string, fn func(fields []string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fn(strings.Split(line, ":"))
	}
	return sc.Err()
}

// ProcessIDs lists the uids and gids (real, effective, saved and
// filesystem ones) of the processes now running, each with one pid that
// has it. Processes that end while they are read, and zombies (which run
// nothing, and linger where pid 1 is slow to reap them), are skipped.
func ProcessIDs(proc string) (map[uint32]int, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, fmt.Errorf("listing the processes: %w", err)
	}
	ids := map[uint32]int{}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid <= 0 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(proc, ent.Name(), "status"))
		if err != nil {
			continue
		}
		if st := string(data); strings.Contains(st, "\nState:\tZ") || strings.Contains(st, "\nState:\tX") {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(line, "Uid:") && !strings.HasPrefix(line, "Gid:") {
				continue
			}
			for _, f := range strings.Fields(line)[1:] {
				if id, err := strconv.ParseUint(f, 10, 32); err == nil {
					if _, ok := ids[uint32(id)]; !ok {
						ids[uint32(id)] = pid
					}
				}
			}
		}
	}
	return ids, nil
}

// PickBlock is the Auto range: the first block of BlockSize ids, aligned
// to BlockSize, above every id the system's files name and every place
// useradd gives accounts made later ids (so that none of them ever gets
// one of the range), for which free says yes (a block another engine
// claimed is not, nor one a host process runs as). It never holds Nobody.
func (t *Taken) PickBlock(free func(Range) bool) (Range, error) {
	floor := t.highest
	for _, z := range t.later {
		floor = max(floor, z.r.Last)
	}
	start := (uint64(floor)/BlockSize + 1) * BlockSize
	for ; start+BlockSize-1 <= maxID; start += BlockSize {
		r := Range{First: uint32(start), Last: uint32(start + BlockSize - 1)}
		if r.Contains(Nobody) || len(t.Conflicts(r)) > 0 {
			continue
		}
		if free == nil || free(r) {
			return r, nil
		}
	}
	return Range{}, fmt.Errorf("no block of %d uids is free above uid %d (the highest an account or subordinate range uses, or useradd gives): give sandboxUidRange a range of your own", BlockSize, floor)
}
