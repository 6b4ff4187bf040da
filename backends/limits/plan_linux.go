package limits

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/sys/unix"
)

// Plan is how one run's limits are enforced: by its cgroups (nil when
// none could be created) and by rlimits applied to the run's first
// process (for bwrap, its child), which the rest of the run descends from.
type Plan struct {
	// Cgroups are the run's cgroups; nil when none could be made and the
	// limits fell back to rlimits.
	Cgroups *Cgroups
	// Applied and Missing say, in words for the run record, which limits
	// hold and how, and which do not.
	Applied []string
	Missing []string
	// Inside says the run's first process was born in Cgroups
	// (Cgroups.StartInside): Apply then only sets the rlimits.
	Inside bool

	rlimits []rlimit
}

type rlimit struct {
	resource int
	value    uint64
}

// Controllers lists the cgroup controllers lim needs.
func Controllers(lim backends.Limits) []string {
	var c []string
	if lim.MemoryMB > 0 {
		c = append(c, "memory")
	}
	if lim.Pids > 0 {
		c = append(c, "pids")
	}
	if lim.CPUs > 0 {
		c = append(c, "cpu")
	}
	return c
}

// NewPlan creates the run's cgroups (when layout allows), below those of
// its sandbox, which hold the limits for all the sandbox's runs together,
// and decides the rlimits. Only "cgroups are not available" degrades to
// rlimits; any other failure is returned and the run must not start.
func NewPlan(layout Layout, sandboxID, runID string, lim backends.Limits) (*Plan, error) {
	p := &Plan{}
	cg, err := layout.Create(sandboxID, runID, Controllers(lim))
	switch {
	case errors.Is(err, ErrNoCgroups):
		cg = nil
	case err != nil:
		return nil, err
	}
	if cg != nil {
		applied, missing, err := cg.SetLimits(lim)
		if err != nil {
			_ = cg.Remove()
			return nil, err
		}
		p.Cgroups, p.Applied, p.Missing = cg, applied, missing
	} else {
		if lim.MemoryMB > 0 {
			// RLIMIT_DATA, not RLIMIT_AS: it bounds what a process
			// allocates (heap and private writable mappings) and leaves
			// alone the address space it only reserves, which Go
			// programs (the forwarder) and V8 (Node) reserve in gigabytes
			// at start: under RLIMIT_AS they cannot start at all.
			p.addRlimit(unix.RLIMIT_DATA, uint64(lim.MemoryMB)<<20)
			p.Applied = append(p.Applied, fmt.Sprintf("memory %d MiB: %s", lim.MemoryMB, RlimitMemory))
		}
		if lim.Pids > 0 {
			p.addRlimit(unix.RLIMIT_NPROC, uint64(lim.Pids))
			p.Applied = append(p.Applied, fmt.Sprintf("pids %d: RLIMIT_NPROC (per user, approximate; no writable cgroup)", lim.Pids))
		}
		if lim.CPUs > 0 {
			p.Missing = append(p.Missing, fmt.Sprintf("cpu %s: not enforced (no writable cgroup)", FormatCPUs(lim.CPUs)))
		}
	}
	if lim.DiskMB > 0 {
		p.addRlimit(unix.RLIMIT_FSIZE, uint64(lim.DiskMB)<<20)
		p.Applied = append(p.Applied, fmt.Sprintf("disk %d MiB: RLIMIT_FSIZE", lim.DiskMB))
	}
	// No core dumps: they would land in the workspace or go to the host's
	// core_pattern handler.
	p.addRlimit(unix.RLIMIT_CORE, 0)
	return p, nil
}

// RlimitMemory says, for the run record, how the memory limit holds
// where no cgroup can be made: each process's own, not the run's total.
const RlimitMemory = "RLIMIT_DATA (what each process allocates, each on its own, not the run's total; no writable cgroup)"

// Rlimit is one resource limit of a Plan: a RLIMIT_* resource and the
// value that is both its soft and its hard limit.
type Rlimit struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// Rlimits returns the plan's rlimits, for a run whose first process sets
// them on itself right before it execs the command (Apply sets them from
// outside instead).
func (p *Plan) Rlimits() []Rlimit {
	out := make([]Rlimit, len(p.rlimits))
	for i, r := range p.rlimits {
		out[i] = Rlimit{r.resource, r.value}
	}
	return out
}

func (p *Plan) addRlimit(resource int, v uint64) {
	p.rlimits = append(p.rlimits, rlimit{resource, v})
}

// Apply puts pid into the run's cgroups and lowers its rlimits. Processes
// it forks afterwards inherit both.
func (p *Plan) Apply(pid int) error {
	if p.Cgroups != nil && !p.Inside {
		if err := p.Cgroups.Add(pid); err != nil {
			return err
		}
	}
	for i, r := range p.rlimits {
		lim := unix.Rlimit{Cur: r.value, Max: r.value}
		err := unix.Prlimit(pid, r.resource, &lim, nil)
		if errors.Is(err, unix.EPERM) && os.Geteuid() == 0 {
			// The rest will be refused the same way: set them all in one
			// switch of credentials.
			return prlimitAsOwner(pid, p.rlimits[i:])
		}
		if err != nil {
			return fmt.Errorf("setting rlimit %d on pid %d: %w", r.resource, pid, err)
		}
	}
	return nil
}

// prlimitAsOwner calls prlimit(2) from a thread whose real uid and gid are
// those of the target. A root engine without CAP_SYS_RESOURCE (containers
// often drop it) may only change the rlimits of processes whose uids and
// gids all equal its real ones. Credentials are per thread in Linux: the
// raw syscalls change only this locked thread, and it is restored before
// it is unlocked. It must not be thrown away instead: if this OS thread
// forked a bwrap earlier, its exit would fire that bwrap's Pdeathsig.
func prlimitAsOwner(pid int, limits []rlimit) error {
	uid, gid, err := realIDs(pid)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Effective and saved ids stay 0, so the thread keeps its
		// capabilities and can switch back.
		err := setRealIDs(uid, gid)
		for _, r := range limits {
			if err != nil {
				break
			}
			lim := unix.Rlimit{Cur: r.value, Max: r.value}
			if err = unix.Prlimit(pid, r.resource, &lim, nil); err != nil {
				err = fmt.Errorf("setting rlimit %d on pid %d: %w", r.resource, pid, err)
			}
		}
		if rerr := setRealIDs(0, 0); rerr != nil {
			done <- fmt.Errorf("restoring thread credentials: %w", rerr)
			select {} // park the thread forever: never reuse or end it
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// setRealIDs sets this thread's real uid and gid (uid first when going
// back to root, gid first when leaving it).
func setRealIDs(uid, gid int) error {
	setgid := func() error {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), 0, 0); e != 0 {
			return fmt.Errorf("setresgid: %w", e)
		}
		return nil
	}
	setuid := func() error {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), 0, 0); e != 0 {
			return fmt.Errorf("setresuid: %w", e)
		}
		return nil
	}
	if uid == 0 {
		return errors.Join(setuid(), setgid())
	}
	if err := setgid(); err != nil {
		return err
	}
	return setuid()
}

// realIDs reads the real uid and gid of pid from /proc. It runs for
// every sandbox started with rlimits: the first 512 bytes of the status
// (the Uid and Gid lines come within them) into a buffer of its own, no
// line split; the whole file when they do not.
func realIDs(pid int) (uid, gid int, err error) {
	name := "/proc/" + strconv.Itoa(pid) + "/status"
	buf, whole, err := readHead(name, 512)
	if err != nil {
		return 0, 0, fmt.Errorf("reading credentials of pid %d: %w", pid, err)
	}
	uid, gid = statusID(buf, "Uid:"), statusID(buf, "Gid:")
	if (uid < 0 || gid < 0) && !whole {
		if buf, err = os.ReadFile(name); err != nil {
			return 0, 0, fmt.Errorf("reading credentials of pid %d: %w", pid, err)
		}
		uid, gid = statusID(buf, "Uid:"), statusID(buf, "Gid:")
	}
	if uid <= 0 || gid <= 0 {
		return 0, 0, fmt.Errorf("pid %d runs as uid %d gid %d; refusing to borrow root ids", pid, uid, gid)
	}
	return uid, gid, nil
}

// statusID is the first number of the line key begins in a /proc status
// ("Uid:\t<real>\t<effective>..."); -1 when there is none.
func statusID(status []byte, key string) int {
	i := bytes.Index(status, []byte("\n"+key))
	if i < 0 {
		return -1
	}
	rest := bytes.TrimLeft(status[i+1+len(key):], " \t")
	end := bytes.IndexAny(rest, " \t\n")
	if end < 0 {
		return -1
	}
	v, err := strconv.Atoi(string(rest[:end]))
	if err != nil {
		return -1
	}
	return v
}
