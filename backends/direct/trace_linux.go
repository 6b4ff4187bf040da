package direct

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/tracer"
	"golang.org/x/sys/unix"
)

// traced returns p as the engine sees it. Under strace, the started
// process is strace, which waits for every traced process, while an
// untraced direct run ends with its command. So that tracing changes
// nothing, a watcher ends the rest of the group as soon as the command
// (strace's child) exits, exactly as Wait does after an untraced command;
// strace then exits with the command's status.
func traced(tr *tracer.Session, p *process) backends.Process {
	if tr.Traced() {
		go endWithCommand(p.cmd.Process.Pid)
	}
	return tr.Process(p)
}

// endWithCommand waits for the command under strace (pid straced) to
// exit, then kills the rest of strace's process group but strace.
func endWithCommand(straced int) {
	child := 0
	for deadline := time.Now().Add(10 * time.Second); child == 0 && time.Now().Before(deadline); {
		child = childOf(straced)
		if child == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if child == 0 {
		return // strace is gone or never forked; Wait handles the group
	}
	fd, err := unix.PidfdOpen(child, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, -1)
		if n > 0 {
			break
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
	for _, pid := range groupMembers(straced) {
		if pid != straced {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// childOf finds the child of strace (pid) that runs the command: strace
// also forks short-lived probes of its own at start, which are still
// named "strace", while the command's process has exec'd (setpriv or the
// command itself).
func childOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(b)) {
		comm, err := os.ReadFile("/proc/" + f + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) == "strace" {
			continue
		}
		if c, err := strconv.Atoi(f); err == nil {
			return c
		}
	}
	return 0
}

// groupMembers lists the processes whose process group is pgid.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		// Fields after the command name: state, ppid, pgrp, ...
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 2 && f[2] == strconv.Itoa(pgid) {
				out = append(out, pid)
			}
		}
	}
	return out
}
