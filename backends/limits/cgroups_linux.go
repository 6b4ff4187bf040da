package limits

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Layout is how cgroups are mounted on this machine.
type Layout struct {
	// version is 1 (per-controller hierarchies), 2 (unified) or 0 (none).
	version int
	// v1 maps a controller (memory, pids, cpu, freezer) to its hierarchy's
	// directory where this engine may create children.
	v1 map[string]string
	// v2 is the unified directory under which run cgroups are created.
	v2 string
	// mounts maps a v1 controller to its hierarchy's mount point.
	mounts map[string]string
	// unit is the scope systemd delegated v2 to the engine in, if it did.
	unit string
}

// Detect reads /proc/self/mountinfo and /proc/self/cgroup. As root,
// run cgroups go under each hierarchy's root; otherwise under the engine's
// own cgroup, which only works when that subtree is delegated to it.
func Detect() Layout {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Layout{}
	}
	own := ownCgroups()
	root := os.Geteuid() == 0
	l := Layout{v1: map[string]string{}, mounts: map[string]string{}}
	var unified string
	for _, line := range strings.Split(string(mounts), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		mnt := f[4]
		switch g[0] {
		case "cgroup2":
			unified = mnt
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				switch opt {
				case "memory", "pids", "cpu", "freezer":
					dir := mnt
					if !root {
						dir = filepath.Join(mnt, own[opt])
					}
					l.v1[opt] = dir
					l.mounts[opt] = mnt
				}
			}
		}
	}
	switch {
	case len(l.v1) > 0:
		l.version = 1
	case unified != "":
		l.version, l.v1 = 2, nil
		l.v2 = unified
		if !root {
			l.v2 = filepath.Join(unified, own[""])
		}
	}
	return l
}

// ownCgroups maps each v1 controller, and "" for v2, to this process's
// cgroup path.
func ownCgroups() map[string]string {
	m := map[string]string{}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return m
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			m[""] = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m
}

// Writable reports whether run cgroups can be created, by creating and
// removing one. It is what the probe shows as "cgroup_writable".
func (l Layout) Writable() bool {
	if l.version == 0 {
		return false
	}
	cg, err := l.Create("", "probe-"+RandomID(), nil)
	if cg == nil || err != nil {
		return false
	}
	cg.Remove()
	return true
}

// via is Cgroups.via for the cgroups made in l.
func (l Layout) via() string {
	if l.unit == "" {
		return ""
	}
	return " in the engine's scope, delegated by systemd"
}

// Name is the cgroup version as the probe shows it: "v1", "v2" or "none".
func (l Layout) Name() string {
	switch l.version {
	case 1:
		return "v1"
	case 2:
		return "v2"
	}
	return "none"
}

// Cgroups are the cgroups of one run. They sit under the cgroups of its
// sandbox, which hold the sandbox's limits for all of its runs together:
// N runs at once share one memory, pids and CPU budget rather than get N
// times it.
type Cgroups struct {
	version int
	// dirs maps a controller to the run's directory; on v2 the only key is "".
	dirs map[string]string
	// sandbox has the same shape for the sandbox's cgroups (nil for a run
	// of no sandbox, whose cgroups sit right under senclaw/).
	sandbox *Cgroups
	// mounts maps a v1 controller to its hierarchy's mount point.
	mounts map[string]string
	// via says, for the run record, whose cgroups they are when they are
	// not the engine's own to make: " in the engine's scope, delegated
	// by systemd", or "".
	via string
}

// ErrNoCgroups means the engine may not create cgroups here; the caller
// falls back to rlimits.
var ErrNoCgroups = errors.New("cgroups are not writable")

// sandboxPrefix starts the name of a sandbox's cgroup under senclaw/; run
// cgroups are named by their run id, which never starts so.
const sandboxPrefix = "sb-"

// Create makes the run's cgroups for the controllers listed in want (nil:
// a tracking cgroup only), below those of sandboxID (made when they are
// not there; "" puts the run right under senclaw/). It returns
// ErrNoCgroups when the parent is not writable; any other failure is an
// error and nothing is left behind.
func (l Layout) Create(sandboxID, runID string, want []string) (*Cgroups, error) {
	if sandboxID != "" && !ValidName(sandboxID) {
		return nil, fmt.Errorf("creating cgroup: invalid sandbox id %q", sandboxID)
	}
	if !ValidName(runID) {
		return nil, fmt.Errorf("creating cgroup: invalid run id %q", runID)
	}
	group := ""
	if sandboxID != "" {
		group = sandboxPrefix + sandboxID
	}
	cg := &Cgroups{version: l.version, dirs: map[string]string{}, mounts: l.mounts, via: l.via()}
	if group != "" {
		cg.sandbox = &Cgroups{version: l.version, dirs: map[string]string{}, via: cg.via}
	}
	switch l.version {
	case 1:
		// pids tracks every process of the run; freezer lets Kill stop a
		// forking tree before killing it.
		for _, c := range append([]string{"pids", "freezer"}, want...) {
			if _, done := cg.dirs[c]; done || l.v1[c] == "" {
				continue
			}
			sbDir, dir, err := mkRunDir(l.v1[c], group, runID, nil)
			if err != nil {
				cg.Remove()
				return nil, err
			}
			cg.dirs[c] = dir
			if cg.sandbox != nil {
				cg.sandbox.dirs[c] = sbDir
			}
		}
	case 2:
		parent := filepath.Join(l.v2, "senclaw")
		if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, noCgroups(err)
		}
		// Enable the controllers for the runs below senclaw/; this fails
		// when the parent holds processes itself (no delegation).
		for _, p := range []string{l.v2, parent} {
			if err := enableControllers(p); err != nil && p == parent {
				return nil, noCgroups(err)
			}
		}
		sbDir, dir, err := mkRunDir(l.v2, group, runID, enableControllers)
		if err != nil {
			return nil, err
		}
		cg.dirs[""] = dir
		if cg.sandbox != nil {
			cg.sandbox.dirs[""] = sbDir
		}
	default:
		return nil, ErrNoCgroups
	}
	if len(cg.dirs) == 0 {
		return nil, ErrNoCgroups
	}
	return cg, nil
}

func enableControllers(dir string) error {
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	var ctl []string
	for _, c := range strings.Fields(string(avail)) {
		if c == "memory" || c == "pids" || c == "cpu" {
			ctl = append(ctl, "+"+c)
		}
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(ctl, " ")), 0o644)
}

// mkRunDir creates base/senclaw/group/runID (base/senclaw/runID when
// group is ""), and returns the group's directory and the run's. When the
// group's cgroup is made, setup (if any) runs on it first. The run of
// another sandbox's last run may remove an empty group directory at any
// time (Remove), so a group that vanishes before the run's directory is
// in it is made again; once the run's is there, the kernel keeps it.
func mkRunDir(base, group, runID string, setup func(dir string) error) (groupDir, dir string, err error) {
	parent := filepath.Join(base, "senclaw")
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", "", noCgroups(err)
	}
	groupDir = parent
	if group != "" {
		groupDir = filepath.Join(parent, group)
	}
	dir = filepath.Join(groupDir, runID)
	for try := 0; ; try++ {
		if group != "" {
			if err := os.Mkdir(groupDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", "", noCgroups(err)
			}
			if setup != nil {
				if err := setup(groupDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return "", "", noCgroups(err)
				}
			}
		}
		err := os.Mkdir(dir, 0o755)
		switch {
		case err == nil:
			return groupDir, dir, nil
		case errors.Is(err, fs.ErrExist):
			return "", "", fmt.Errorf("creating cgroup %s: a run with this id exists", dir)
		case errors.Is(err, fs.ErrNotExist) && group != "" && try < 10:
			continue // the group went between the two mkdirs
		}
		return "", "", noCgroups(err)
	}
}

// noCgroups turns permission problems into ErrNoCgroups.
func noCgroups(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EROFS) {
		return ErrNoCgroups
	}
	return fmt.Errorf("creating cgroup: %w", err)
}

// Sweep removes the empty run cgroups a previous engine left behind when
// it died before cleaning up, and the sandbox cgroups left empty, and
// returns how many went. A cgroup with processes or child cgroups cannot
// be removed (the kernel refuses), so runs going on are never touched;
// only cgroups of runs that began more than an hour ago are tried, so one
// that another engine has just made, still empty, stays; and a sandbox
// cgroup that goes just before a run makes its own in it is made again
// (mkRunDir).
func (l Layout) Sweep(now time.Time) int {
	var bases []string
	switch l.version {
	case 1:
		for _, base := range l.v1 {
			bases = append(bases, base)
		}
	case 2:
		bases = []string{l.v2}
	}
	n := 0
	sweepRuns := func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.IsDir() && staleRun(e.Name(), now) && os.Remove(filepath.Join(dir, e.Name())) == nil {
				n++
			}
		}
	}
	for _, base := range bases {
		parent := filepath.Join(base, "senclaw")
		sweepRuns(parent)
		groups, _ := filepath.Glob(filepath.Join(parent, sandboxPrefix+"*"))
		for _, g := range groups {
			sweepRuns(g)
			if os.Remove(g) == nil {
				n++
			}
		}
	}
	return n
}

// staleAfter is how old a run must be for its empty cgroup to be swept:
// longer than any run may last (10 minutes).
const staleAfter = time.Hour

// staleRun reports whether name is an engine run id ("r" and the start
// time in nanoseconds as 16 hex digits, then more) older than staleAfter.
func staleRun(name string, now time.Time) bool {
	if len(name) < 17 || name[0] != 'r' {
		return false
	}
	ns, err := strconv.ParseUint(name[1:17], 16, 64)
	if err != nil {
		return false
	}
	return now.Sub(time.Unix(0, int64(ns))) > staleAfter
}

// Leftover returns the cgroups of run runID of sandboxID ("" for a run of
// no sandbox) that are still there, or nil: what a run of a dead engine
// left. The names are the run's own, so only that run's
// cgroups are found, never another engine's.
func (l Layout) Leftover(sandboxID, runID string) *Cgroups {
	if !ValidName(runID) || (sandboxID != "" && !ValidName(sandboxID)) {
		return nil
	}
	group := ""
	if sandboxID != "" {
		group = sandboxPrefix + sandboxID
	}
	bases := map[string]string{"": l.v2}
	if l.version == 1 {
		bases = l.v1
	}
	if l.version == 0 {
		return nil
	}
	cg := &Cgroups{version: l.version, dirs: map[string]string{}}
	if group != "" {
		cg.sandbox = &Cgroups{version: l.version, dirs: map[string]string{}}
	}
	for c, base := range bases {
		groupDir := filepath.Join(base, "senclaw", group)
		dir := filepath.Join(groupDir, runID)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			cg.dirs[c] = dir
			if cg.sandbox != nil {
				cg.sandbox.dirs[c] = groupDir
			}
		}
	}
	if len(cg.dirs) == 0 {
		return nil
	}
	return cg
}

// Reap kills what is left in a dead engine's run's cgroups and removes
// them; it reports whether there were any.
func (l Layout) Reap(sandboxID, runID string) (bool, error) {
	cg := l.Leftover(sandboxID, runID)
	if cg == nil {
		return false, nil
	}
	return true, errors.Join(cg.KillAll(), cg.Remove())
}

// LeftoverDirs lists the directories of Leftover's cgroups.
func (l Layout) LeftoverDirs(sandboxID, runID string) []string {
	cg := l.Leftover(sandboxID, runID)
	if cg == nil {
		return nil
	}
	var out []string
	for _, d := range cg.dirs {
		out = append(out, d)
	}
	return out
}
