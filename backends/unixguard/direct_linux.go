package unixguard

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Direct is a run's guard that the engine loads itself, with no program
// inside the sandbox to hand it over: for a sandbox that runs no
// forwarder anyway (network off, no terminal). The engine loads the
// filter on the OS thread that then starts the sandbox (Load), so the
// sandbox and everything under it inherit it, and supervises the listener
// once the sandbox is built (Supervise).
type Direct struct {
	pol      Policy
	listener int
	// proc and pidfd hold the sandbox's first process (Watch).
	proc, pidfd int
}

// NewDirect prepares the guard of a run that pol describes.
func NewDirect(pol Policy) (*Direct, error) {
	if err := ready(pol); err != nil {
		return nil, err
	}
	return &Direct{pol: pol, listener: -1, proc: -1, pidfd: -1}, nil
}

// Load loads the filter (Program) for the calling thread and everything
// it starts from then on, and keeps the listener. The caller must be a
// locked OS thread, not the main one, that starts the sandbox and nothing
// else and ends with its goroutine (which returns without unlocking it):
// the filter stays with the thread, and the Go runtime clones no thread
// from a locked one. Without CAP_SYS_ADMIN seccomp wants no_new_privs,
// which is then set on the thread (bwrap sets it for itself anyway).
func (d *Direct) Load() error {
	if d.listener >= 0 {
		return errors.New("the Unix socket guard is loaded already")
	}
	prog, err := programFor(false)
	if err != nil {
		return err
	}
	fd, err := loadFilter(prog, 0, false)
	if errors.Is(err, unix.EACCES) {
		fd, err = loadFilter(prog, 0, true)
	}
	if err != nil {
		return fmt.Errorf("loading the Unix socket guard: %w", err)
	}
	d.listener = fd
	return nil
}

// Watch takes hold of the sandbox's first process, pid (bwrap's child),
// while it still waits for the go-ahead (bwrap's block pipe): Supervise
// finds the sandbox there, never in a process that got its pid after it.
func (d *Direct) Watch(pid int) error {
	proc, err := unix.Open("/proc/"+strconv.Itoa(pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("finding the sandbox's first process %d: %w", pid, err)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		unix.Close(proc)
		return fmt.Errorf("finding the sandbox's first process %d: %w", pid, err)
	}
	d.proc, d.pidfd = proc, pidfd
	return nil
}

// Supervise learns the places of the sandbox that Watch holds, once its
// mounts are built, and serves the listener until the run is over
// (Supervisor.Close). A sandbox that is over already (a quick command)
// has nothing left to guard: no supervisor then, and no error. Any error
// means the run must be ended.
func (d *Direct) Supervise() (*Supervisor, error) {
	if d.listener < 0 || d.proc < 0 {
		return nil, errors.New("the Unix socket guard was not loaded")
	}
	root, err := unix.Openat(d.proc, "root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if d.ended() {
			// Its pid namespace, and every process in it, ended with it.
			d.Close()
			return nil, nil
		}
		return nil, fmt.Errorf("opening the sandbox's root: %w", err)
	}
	pl, err := placesIn(root, d.pol)
	if err != nil {
		if d.ended() {
			// It ended while its places were looked for: its mounts went
			// with its mount namespace.
			d.Close()
			return nil, nil
		}
		return nil, err
	}
	listener := d.listener
	d.listener = -1
	s, err := newSupervisor(listener, 0, pl, d.pol) // closes listener on error
	if err != nil {
		pl.close()
		return nil, err
	}
	return s, nil
}

// ended reports whether the sandbox's first process has exited, waiting
// a little for one that is on its way out (its root goes first).
func (d *Direct) ended() bool {
	fds := []unix.PollFd{{Fd: int32(d.pidfd), Events: unix.POLLIN}}
	deadline := time.Now().Add(2 * time.Second)
	for {
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
		if errors.Is(err, unix.EINTR) && time.Now().Before(deadline) {
			continue
		}
		return err == nil && n == 1 && fds[0].Revents&unix.POLLIN != 0
	}
}

// Close closes the listener if Supervise did not take it, and lets go of
// the sandbox's first process.
func (d *Direct) Close() {
	for _, fd := range []*int{&d.listener, &d.proc, &d.pidfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
