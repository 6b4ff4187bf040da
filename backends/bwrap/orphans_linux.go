package bwrap

import (
	"os"
	"strconv"
	"strings"
)

// seccompMemfdPrefix starts the name of the memfd that hands a run's
// seccomp program to bwrap; the run's id follows. bwrap and everything
// it forks before the sandbox's command runs hold it, which is how
// ReapOrphans finds them.
const seccompMemfdPrefix = "senclaw-seccomp-"

func seccompMemfdName(runID string) string {
	if runID == "" {
		return "senclaw-seccomp"
	}
	return seccompMemfdPrefix + runID
}

// Orphans lists the processes a dead engine's runs left that no parent
// waits for: bwrap's inner process waits on an eventfd for the outer one
// before it sets its own parent-death signal, and strace's child for its
// tracer, so an engine killed at that moment (the outer bwrap, or strace,
// dies with it) leaves them waiting forever, in no run cgroup yet. They
// are found by the memfd they hold, named after the run (runs: the ids
// the engine's records name), so another engine's processes are never
// touched. The inner bwrap is the first process of the sandbox's pid
// namespace: whatever it started dies with it.
func (b *Backend) Orphans(runs map[string]bool) map[int]string {
	out := map[int]string{}
	if len(runs) == 0 {
		return out
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == os.Getpid() {
			continue
		}
		dir := "/proc/" + e.Name()
		switch comm, _ := os.ReadFile(dir + "/comm"); strings.TrimSpace(string(comm)) {
		case "bwrap", "strace", "setpriv":
		default:
			continue
		}
		if id := heldRun(dir); id != "" && runs[id] {
			out[pid] = id
		}
	}
	return out
}

// heldRun returns the run id of the seccomp memfd the process of dir
// holds, or "".
func heldRun(dir string) string {
	fds, _ := os.ReadDir(dir + "/fd")
	for _, fd := range fds {
		target, err := os.Readlink(dir + "/fd/" + fd.Name())
		if err != nil {
			continue
		}
		if rest, ok := strings.CutPrefix(target, "/memfd:"+seccompMemfdPrefix); ok {
			return strings.TrimSuffix(rest, " (deleted)")
		}
	}
	return ""
}
