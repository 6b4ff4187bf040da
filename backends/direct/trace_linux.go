package direct

import (
	"errors"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/tracer"
	"golang.org/x/sys/unix"
)

// traced returns p as the engine sees it. Under strace, the started
// process is strace (or the subreaper in front of it), which waits for
// every traced process, while an untraced direct run ends with its
// command. So that tracing changes nothing, a watcher ends the rest of
// the run's tree as soon as the command (strace's child) exits, exactly
// as Wait does after an untraced command; strace then exits with the
// command's status.
func traced(tr *tracer.Session, p *process) backends.Process {
	if tr.Traced() {
		go endWithCommand(p, tr)
	}
	return tr.Process(p)
}

// endWithCommand waits for the command under strace to exit, then kills
// the rest of the run's tree but the started process and strace.
//
// The command's pid comes from strace's first trace line, not from a
// look at strace's children: a command that ends before the watcher
// looks must not leave its background processes to keep strace, and the
// run, alive.
func endWithCommand(p *process, tr *tracer.Session) {
	select {
	case <-tr.Started():
	case <-tr.Done():
		return // strace ended without running anything; Wait kills the tree
	}
	strace, _ := parentOf(tr.Root())
	waitExit(tr.Root())
	_ = p.tree.kill(p.cmd.Process.Pid, strace)
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
