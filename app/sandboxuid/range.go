// Package sandboxuid gives each sandbox of a root engine a host uid of its own.
//
// A root engine runs sandboxed code unprivileged. Were that one uid for
// every sandbox (nobody, 65534), each sandbox could reach the others'
// processes (/proc/PID/environ, /proc/PID/root) and files, and so could
// every host service that runs as nobody. As systemd's DynamicUser= does,
// the engine takes a range of uids no account, subordinate range (rootless
// containers) or running process uses, claims it on this machine so that
// no other engine takes it, and gives each sandbox one uid (its gid the
// same number) that no other sandbox holds while it is in use.
package sandboxuid

import (
	"fmt"
	"strconv"
	"strings"
)

// BlockSize is the size of the default range, and the alignment of the
// blocks a range is claimed by: as many uids as a subordinate range of
// useradd's.
const BlockSize = 1 << 16

// Auto is the sandboxUidRange setting's default: the first block of
// BlockSize uids above everything the system uses (PickBlock).
const Auto = "auto"

// Nobody is the overflow uid, which many host services run as: never a
// sandbox's.
const Nobody = 65534

// maxID bounds the uids a range may hold: some programs read uids as
// signed 32-bit numbers, and (uid_t)-1 means "no change".
const maxID = 1<<31 - 1

// Range is an inclusive span of host uids (and the gids of the same
// numbers).
type Range struct {
	First, Last uint32
}

// String is the setting's form, "FIRST-LAST".
func (r Range) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Contains reports whether id lies in r.
func (r Range) Contains(id uint32) bool { return id >= r.First && id <= r.Last }

// Size is how many ids r holds.
func (r Range) Size() int { return int(r.Last-r.First) + 1 }

func (r Range) overlaps(o Range) bool { return r.First <= o.Last && o.First <= r.Last }

// MinSize is the smallest range a setting may name: the engine's own uid
// and room for sandboxes.
const MinSize = 64

// ParseRange reads the sandboxUidRange setting: Auto, or "FIRST-LAST"
// (inclusive). A range holds at least MinSize ids, never 0 or Nobody, and
// lies below 2^31. auto reports Auto.
func ParseRange(s string) (r Range, auto bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" || s == Auto {
		return Range{}, true, nil
	}
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 32)
	last, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return Range{}, false, fmt.Errorf("is not a uid range: give %q or FIRST-LAST, for example 1000000-1065535", Auto)
	}
	r = Range{First: uint32(first), Last: uint32(last)}
	switch {
	case first > last:
		return Range{}, false, fmt.Errorf("ends before it starts: give FIRST-LAST with FIRST <= LAST")
	case last > maxID:
		return Range{}, false, fmt.Errorf("goes past uid %d: some programs read larger uids as negative numbers", maxID)
	case r.Size() < MinSize:
		return Range{}, false, fmt.Errorf("holds %d uids; give at least %d (one is the engine's own, one per sandbox in use)", r.Size(), MinSize)
	case first < 1000:
		return Range{}, false, fmt.Errorf("starts at %d, among the system's own uids (below 1000): start it above every account and subordinate range, or use %q", first, Auto)
	case r.Contains(Nobody):
		return Range{}, false, fmt.Errorf("holds %d (nobody), which host services run as: no sandbox may share it", Nobody)
	}
	return r, false, nil
}
