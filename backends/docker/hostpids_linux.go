package docker

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hostProc is a process of a container seen from this machine's /proc.
type hostProc struct {
	pid, ppid, sid int
}

// sharesHostPids reports whether the daemon's pids are this machine's: the
// container's init (pid as the daemon reports it) is in a cgroup named
// after the container here. It is false for a daemon in a VM (Docker
// Desktop) or on another machine, whose pids mean nothing here.
func sharesHostPids(initPid int, containerID string) bool {
	return initPid > 0 && containerID != "" && inContainer(initPid, containerID)
}

func inContainer(pid int, containerID string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return err == nil && bytes.Contains(data, []byte(containerID))
}

// containerProcs lists the container's processes: from its pids cgroup
// when that can be read, else by scanning /proc.
func containerProcs(initPid int, containerID string) []hostProc {
	pids := cgroupPids(initPid)
	if pids == nil {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if pid, err := strconv.Atoi(e.Name()); err == nil && inContainer(pid, containerID) {
				pids = append(pids, pid)
			}
		}
	}
	procs := make([]hostProc, 0, len(pids))
	for _, pid := range pids {
		if p, ok := readStat(pid); ok {
			procs = append(procs, p)
		}
	}
	return procs
}

// cgroupPids reads cgroup.procs of initPid's pids cgroup (v1) or unified
// cgroup (v2); nil when it cannot.
func cgroupPids(initPid int) []int {
	f, err := os.Open("/proc/" + strconv.Itoa(initPid) + "/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var dir string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[1] == "pids" || strings.Contains(parts[1], "pids,") || strings.HasSuffix(parts[1], ",pids"):
			dir = filepath.Join("/sys/fs/cgroup", parts[1], parts[2])
		case parts[0] == "0" && parts[1] == "" && dir == "":
			dir = filepath.Join("/sys/fs/cgroup", parts[2])
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if dir == "" || err != nil {
		return nil
	}
	var pids []int
	for _, line := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(line); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// readStat reads ppid and session of pid from /proc/<pid>/stat.
func readStat(pid int) (hostProc, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return hostProc{}, false
	}
	// The command name may contain spaces and parentheses: fields start
	// after the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return hostProc{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 4 {
		return hostProc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	sid, _ := strconv.Atoi(f[3])
	return hostProc{pid: pid, ppid: ppid, sid: sid}, true
}

// treeOf picks the processes of leader's run: its session (runc makes each
// exec a session leader) and its descendants, never the container's init.
func treeOf(procs []hostProc, leader, initPid int) []int {
	parent := map[int]int{}
	for _, p := range procs {
		parent[p.pid] = p.ppid
	}
	var tree []int
	for _, p := range procs {
		if p.pid == initPid {
			continue
		}
		in := p.sid == leader || p.pid == leader
		for a, n := parent[p.pid], 0; !in && a > 1 && n < 64; a, n = parent[a], n+1 {
			in = a == leader
		}
		if in {
			tree = append(tree, p.pid)
		}
	}
	return tree
}

// sweepable picks what a sweep kills: every process of the container but
// its init, the keeper (init's session) and the sessions of exec leaders
// still alive (a process whose parent is outside the container: a run
// going on, or a kill of the engine's), except own's. What a run started
// is in its leader's session or, once it left it (setsid, a double fork
// whose middle process exited), in a session whose leader is not an exec
// leader: a process cannot make its parent leave the container, nor join
// a live exec's session. So a run's leftovers are killed at its end,
// while the other runs of the sandbox keep going.
func sweepable(procs []hostProc, initPid, own int) []int {
	inside := make(map[int]bool, len(procs))
	for _, p := range procs {
		inside[p.pid] = true
	}
	live := map[int]bool{}
	for _, p := range procs {
		if p.pid != initPid && p.pid != own && !inside[p.ppid] {
			live[p.sid] = true
		}
	}
	var out []int
	for _, p := range procs {
		if p.pid != initPid && p.sid != initPid && !live[p.sid] {
			out = append(out, p.pid)
		}
	}
	return out
}

// sweepHost SIGKILLs what sweepable picks until none is left (a dying
// tree can still fork). It returns syscall.EPERM when this machine may
// not signal them (an engine user other than the sandbox's).
func sweepHost(initPid int, containerID string, own int) error {
	// The run's leader first, so that it does not exit on its own when
	// its children die (its status would not say it was killed).
	if inContainer(own, containerID) {
		if err := syscall.Kill(own, syscall.SIGKILL); errors.Is(err, syscall.EPERM) {
			return err
		}
	}
	for round := 0; round < 20; round++ {
		doomed := sweepable(containerProcs(initPid, containerID), initPid, own)
		if len(doomed) == 0 {
			return nil
		}
		for _, pid := range doomed {
			if err := syscall.Kill(pid, syscall.SIGKILL); errors.Is(err, syscall.EPERM) {
				return err
			}
		}
		time.Sleep(time.Duration(round+1) * 5 * time.Millisecond)
	}
	return errors.New("processes of the run kept appearing after 20 kill rounds")
}

// signalHostTree sends sig once to every process of leader's tree.
func signalHostTree(leader, initPid int, containerID string, sig syscall.Signal) error {
	for _, pid := range treeOf(containerProcs(initPid, containerID), leader, initPid) {
		if err := syscall.Kill(pid, sig); errors.Is(err, syscall.EPERM) {
			return err
		}
	}
	return nil
}

// treePids lists leader's tree as host pids.
func treePids(leader, initPid int, containerID string) []int {
	return treeOf(containerProcs(initPid, containerID), leader, initPid)
}

// nsPid is pid's number inside its own pid namespace (the container's),
// from the last NSpid field of /proc/<pid>/status; 0 when unknown.
func nsPid(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[len(f)-1])
				return n
			}
		}
	}
	return 0
}

// signalHostPid kills one host pid after checking it belongs to the
// container.
func signalHostPid(pid int, containerID string) error {
	if !inContainer(pid, containerID) {
		return errors.New("not a process of this sandbox")
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// runPids lists the container's processes that runs made: all but init and
// the keeper, which share init's session (runs are sessions of their own,
// and their orphans keep that session).
func runPids(initPid int, containerID string) []int {
	var pids []int
	for _, p := range containerProcs(initPid, containerID) {
		if p.pid != initPid && p.sid != initPid {
			pids = append(pids, p.pid)
		}
	}
	return pids
}
