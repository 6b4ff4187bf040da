package direct

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// A direct run has no barrier, but what it starts still ends with it:
// the whole tree is tracked so that a process that left the run's process
// group and session (setsid, a double fork whose middle process exited)
// is killed at the run's end too. Where the engine may make a cgroup (v2,
// the unified hierarchy, as root or in a delegated subtree), the run is
// born in one of its own (clone3 CLONE_INTO_CGROUP), which nothing it
// starts can leave without the right to write another cgroup; elsewhere
// a child subreaper (this program again, Options.Reaper) stands between
// the engine and the command, inherits every orphan, and kills them all.

// track prepares cmd (not yet started) so that its whole tree can be
// ended: in a cgroup of the run's own when one can be made, else under
// the child subreaper, else (no reaper given) by process group only.
func (b *Backend) track(cmd *exec.Cmd, spec *backends.Spec) (tree, error) {
	if !b.opts.noCgroup {
		cg, err := newRunCgroup(spec.RunID)
		switch {
		case err == nil:
			fd, err := syscall.Open(cg.dir, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				cg.release()
				return nil, fmt.Errorf("opening the run's cgroup: %w", err)
			}
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
			cg.fd = fd
			return cg, nil
		case !errors.Is(err, errNoCgroup):
			return nil, err
		}
	}
	if b.opts.Reaper != "" {
		return underReaper(cmd, b.opts.Reaper)
	}
	return &groupTree{}, nil
}

// errNoCgroup means no cgroup can be made for the run here.
var errNoCgroup = errors.New("no writable cgroup v2 hierarchy")

// runCgroup is the cgroup v2 of one run, for tracking only: no controller
// is enabled in it, the run's limits (there are none) are not its job.
type runCgroup struct {
	dir string
	fd  int
}

// newRunCgroup makes <unified>/senclaw-direct/<runID>: below the root of
// the unified hierarchy as root, else below the engine's own cgroup when
// that subtree is delegated to it.
func newRunCgroup(runID string) (*runCgroup, error) {
	mnt, own := unifiedHierarchy()
	if mnt == "" {
		return nil, errNoCgroup
	}
	base := mnt
	if os.Geteuid() != 0 {
		base = filepath.Join(mnt, own)
	}
	parent := filepath.Join(base, "senclaw-direct")
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, cgroupErr(err)
	}
	if runID == "" || strings.ContainsAny(runID, "/.") {
		runID = "run-" + strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	dir := filepath.Join(parent, runID)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, cgroupErr(err)
	}
	return &runCgroup{dir: dir, fd: -1}, nil
}

func cgroupErr(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EROFS) {
		return errNoCgroup
	}
	return fmt.Errorf("creating the run's cgroup: %w", err)
}

// unifiedHierarchy finds where cgroup v2 is mounted (the whole of
// /sys/fs/cgroup, or its unified part on a hybrid machine) and this
// process's cgroup in it.
func unifiedHierarchy() (mnt, own string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" {
			mnt = f[4]
			break
		}
	}
	if mnt == "" {
		return "", ""
	}
	fh, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return mnt, "/"
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return mnt, rest
		}
	}
	return mnt, "/"
}

func (cg *runCgroup) started(int) {
	if cg.fd >= 0 {
		syscall.Close(cg.fd)
		cg.fd = -1
	}
}

func (cg *runCgroup) pids() []int {
	data, err := os.ReadFile(filepath.Join(cg.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// kill kills the cgroup's processes (but keep) until it is empty.
func (cg *runCgroup) kill(keep ...int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []int
		for _, pid := range cg.pids() {
			if !slices.Contains(keep, pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("killing the run's processes: %v still alive after 10s", left)
		}
		if len(keep) == 0 && os.WriteFile(filepath.Join(cg.dir, "cgroup.kill"), []byte("1"), 0o644) == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// release removes the cgroup, retrying while the kernel finishes with
// the processes that just exited.
func (cg *runCgroup) release() {
	cg.started(0)
	for i := 0; i < 100; i++ {
		if err := os.Remove(cg.dir); err == nil || errors.Is(err, fs.ErrNotExist) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (cg *runCgroup) held() string {
	return "processes: a cgroup of the run's own (v2), emptied when it ends, so nothing it started outlives it (a process running as root could still move itself out)"
}

// staleAfter is how long a run cgroup must have existed before Sweep
// takes it for one a dead engine left: longer than any run may last (10
// minutes), so that the runs of another engine going on now are safe.
const staleAfter = time.Hour

// Sweep ends what the runs of a dead engine left in their cgroups (a
// crash leaves no one to kill a run's tree), and removes the cgroups. It
// returns how many it removed. The engine calls it at start.
func (b *Backend) Sweep() int {
	if b.opts.noCgroup {
		return 0
	}
	mnt, own := unifiedHierarchy()
	if mnt == "" {
		return 0
	}
	base := mnt
	if os.Geteuid() != 0 {
		base = filepath.Join(mnt, own)
	}
	parent := filepath.Join(base, "senclaw-direct")
	entries, _ := os.ReadDir(parent)
	n := 0
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !e.IsDir() || time.Since(fi.ModTime()) < staleAfter {
			continue
		}
		cg := &runCgroup{dir: filepath.Join(parent, e.Name()), fd: -1}
		if cg.kill() == nil {
			cg.release()
			if _, err := os.Stat(cg.dir); errors.Is(err, fs.ErrNotExist) {
				n++
			}
		}
	}
	return n
}

// runCgroupDir is where run runID's cgroup is, or "" where there are none.
func (b *Backend) runCgroupDir(runID string) string {
	mnt, own := unifiedHierarchy()
	if b.opts.noCgroup || mnt == "" || runID == "" || strings.ContainsAny(runID, "/.") {
		return ""
	}
	base := mnt
	if os.Geteuid() != 0 {
		base = filepath.Join(mnt, own)
	}
	return filepath.Join(base, "senclaw-direct", runID)
}

// RunCgroups lists the cgroup of a run, if it is there.
func (b *Backend) RunCgroups(sandboxID, runID string) []string {
	if dir := b.runCgroupDir(runID); dir != "" {
		if _, err := os.Stat(dir); err == nil {
			return []string{dir}
		}
	}
	return nil
}

// ReapRun kills what a run of a dead engine left in its cgroup and
// removes it (the engine knows the run from its record).
func (b *Backend) ReapRun(sandboxID, runID string) (bool, error) {
	if len(b.RunCgroups(sandboxID, runID)) == 0 {
		return false, nil
	}
	cg := &runCgroup{dir: b.runCgroupDir(runID), fd: -1}
	err := cg.kill()
	cg.release()
	return true, err
}
