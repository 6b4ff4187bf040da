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
		go endWithCommand(p.cmd.Process.Pid, tr)
	}
	return tr.Process(p)
}

// endWithCommand waits for the command under strace (pid straced) to
// exit, then kills the rest of strace's process group but strace.
//
// The command's pid comes from strace's first trace line, not from a
// look at strace's children: a command that ends before the watcher
// looks must not leave its background processes to keep strace, and the
// run, alive.
func endWithCommand(straced int, tr *tracer.Session) {
	select {
	case <-tr.Started():
	case <-tr.Done():
		return // strace ended without running anything; Wait kills the group
	}
	waitExit(tr.Root())
	for _, pid := range groupMembers(straced) {
		if pid != straced {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// waitExit returns once process pid has exited. It waits on a pidfd, or,
// on a kernel without pidfds (before 5.3), polls until the pid is gone.
func waitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		for syscall.Kill(pid, 0) == nil {
			time.Sleep(20 * time.Millisecond)
		}
		return
	}
	defer unix.Close(fd)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, -1)
		if n > 0 {
			return
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			for syscall.Kill(pid, 0) == nil {
				time.Sleep(20 * time.Millisecond)
			}
			return
		}
	}
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
