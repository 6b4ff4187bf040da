package limits

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// cpuPeriodUs is the CFS period; the quota is CPUs times this.
const cpuPeriodUs = 100000

// SharedLimits is the line of Plan.Applied that says the limits are the
// sandbox's, for all of its runs together.
const SharedLimits = "limits: one budget for all of the sandbox's runs at once (the sandbox's cgroup holds them; each run's sits below it)"

// SetLimits writes lim into the cgroups of the run's sandbox (into the
// run's own for a run of no sandbox) and returns what applied and what
// did not. A failed write is an error: the caller fails closed. Every run
// writes them again, so a sandbox's changed limits hold from its next run.
func (cg *Cgroups) SetLimits(lim backends.Limits) (applied, missing []string, err error) {
	if cg.sandbox != nil {
		applied, missing, err = cg.sandbox.SetLimits(lim)
		if err == nil && (lim.MemoryMB > 0 || lim.Pids > 0 || lim.CPUs > 0) {
			applied = append(applied, SharedLimits)
		}
		return applied, missing, err
	}
	v := "cgroup v" + strconv.Itoa(cg.version)
	if lim.MemoryMB > 0 {
		bytes := strconv.FormatInt(int64(lim.MemoryMB)<<20, 10)
		what := fmt.Sprintf("memory %d MiB", lim.MemoryMB)
		if cg.version == 1 {
			// memsw is memory plus swap: equal to the limit means no swap.
			// It may never be below the memory limit, so when a sandbox's
			// limit grows, memsw goes first.
			memsw := cg.has("memory", "memory.memsw.limit_in_bytes")
			err := cg.write("memory", "memory.limit_in_bytes", bytes)
			if err != nil && memsw && errors.Is(err, syscall.EINVAL) {
				err = cg.write("memory", "memory.memsw.limit_in_bytes", bytes)
				if err == nil {
					err = cg.write("memory", "memory.limit_in_bytes", bytes)
				}
			}
			if err != nil {
				return nil, nil, err
			}
			if memsw {
				if err := cg.write("memory", "memory.memsw.limit_in_bytes", bytes); err != nil {
					return nil, nil, err
				}
			} else {
				missing = append(missing, "swap: not limited (no memory.memsw in cgroup v1; swap accounting is off)")
			}
		} else {
			if err := cg.write("", "memory.max", bytes); err != nil {
				return nil, nil, err
			}
			if cg.has("", "memory.swap.max") {
				if err := cg.write("", "memory.swap.max", "0"); err != nil {
					return nil, nil, err
				}
			}
		}
		applied = append(applied, what+": "+v+cg.via)
	}
	if lim.Pids > 0 {
		if err := cg.write("pids", "pids.max", strconv.Itoa(lim.Pids)); err != nil {
			return nil, nil, err
		}
		applied = append(applied, fmt.Sprintf("pids %d: %s%s", lim.Pids, v, cg.via))
	}
	if lim.CPUs > 0 && !cg.has("cpu", cpuFile(cg.version)) {
		// A delegated subtree may lack the cpu controller (systemd
		// before 252 delegates only memory and pids to a user): said,
		// not refused, as with no cgroup at all.
		missing = append(missing, fmt.Sprintf("cpu %s: not enforced (the cpu controller is not delegated to the engine)", FormatCPUs(lim.CPUs)))
	} else if lim.CPUs > 0 {
		quota := max(int(lim.CPUs*cpuPeriodUs), 1000)
		if cg.version == 1 {
			err = cg.write("cpu", "cpu.cfs_period_us", strconv.Itoa(cpuPeriodUs))
			if err == nil {
				err = cg.write("cpu", "cpu.cfs_quota_us", strconv.Itoa(quota))
			}
		} else {
			err = cg.write("", "cpu.max", fmt.Sprintf("%d %d", quota, cpuPeriodUs))
		}
		if err != nil {
			return nil, nil, err
		}
		applied = append(applied, fmt.Sprintf("cpu %s: %s cfs%s", FormatCPUs(lim.CPUs), v, cg.via))
	}
	return applied, missing, nil
}

// cpuFile is the file of the cpu controller's quota.
func cpuFile(version int) string {
	if version == 1 {
		return "cpu.cfs_quota_us"
	}
	return "cpu.max"
}

// dir returns the run's directory for controller c ("" on v2).
func (cg *Cgroups) dir(c string) string {
	if cg.version == 2 {
		return cg.dirs[""]
	}
	return cg.dirs[c]
}

func (cg *Cgroups) has(c, file string) bool {
	d := cg.dir(c)
	if d == "" {
		return false
	}
	return exists(filepath.Join(d, file))
}

func (cg *Cgroups) write(c, file, value string) error {
	d := cg.dir(c)
	if d == "" {
		return fmt.Errorf("setting %s: the %s controller is not available", file, c)
	}
	if err := writeSmall(filepath.Join(d, file), []byte(value)); err != nil {
		return fmt.Errorf("setting %s: %w", file, err)
	}
	return nil
}

// Add moves pid into every cgroup of the run.
func (cg *Cgroups) Add(pid int) error {
	for _, d := range cg.dirs {
		if err := writeSmall(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid))); err != nil {
			return fmt.Errorf("moving pid %d into %s: %w", pid, d, err)
		}
	}
	return nil
}

// Procs lists the pids in any of the run's cgroups.
func (cg *Cgroups) Procs() []int {
	seen := map[int]bool{}
	var out []int
	for _, d := range cg.dirs {
		// Read at every run's end, when it is most often empty.
		b, err := readSmall(filepath.Join(d, "cgroup.procs"), 64)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			// The engine's own pid is there while one of its threads
			// starts the run's first process inside (StartInside): it is
			// never the run's.
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] && pid != os.Getpid() {
				seen[pid] = true
				out = append(out, pid)
			}
		}
	}
	return out
}

// Signal sends SIGKILL to every process in the run's cgroups once.
func (cg *Cgroups) Signal() {
	if cg.version == 2 && cg.has("", "cgroup.kill") {
		_ = cg.write("", "cgroup.kill", "1")
		return
	}
	for _, pid := range cg.Procs() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// KillAll kills everything in the run's cgroups and waits until they are
// empty. On v1 the tree is frozen first so a fork loop cannot outrun it.
func (cg *Cgroups) KillAll() error {
	if len(cg.Procs()) == 0 {
		return nil // the usual end: everything already exited
	}
	frozen := cg.version == 1 && cg.write("freezer", "freezer.state", "FROZEN") == nil
	cg.Signal()
	if frozen {
		_ = cg.write("freezer", "freezer.state", "THAWED")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(cg.Procs()) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("killing the run's processes: %v still alive", cg.Procs())
		}
		cg.Signal()
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// OOMKilled reports whether the kernel's OOM killer struck inside the run.
func (cg *Cgroups) OOMKilled() bool {
	file := "memory.events"
	if cg.version == 1 {
		file = "memory.oom_control"
	}
	d := cg.dir("memory")
	if d == "" {
		return false
	}
	b, err := readSmall(filepath.Join(d, file), 256)
	if err != nil {
		return false
	}
	for line := range bytes.Lines(b) {
		if n, ok := bytes.CutPrefix(line, []byte("oom_kill ")); ok && string(bytes.TrimSpace(n)) != "0" {
			return true
		}
	}
	return false
}

// Remove deletes the run's cgroups, retrying while the kernel finishes
// tearing down exited processes, and then its sandbox's when no other run
// of the sandbox is in them.
func (cg *Cgroups) Remove() error {
	err := cg.removeOwn()
	if cg.sandbox != nil && err == nil {
		for _, d := range cg.sandbox.dirs {
			_ = os.Remove(d) // refused while another run's cgroup is in it
		}
	}
	return err
}

func (cg *Cgroups) removeOwn() error {
	var errs []error
	for _, d := range cg.dirs {
		var err error
		for i := 0; i < 100; i++ {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// FormatCPUs prints 1 as "1.0" and 0.5 as "0.5".
func FormatCPUs(c float64) string {
	s := strconv.FormatFloat(c, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
