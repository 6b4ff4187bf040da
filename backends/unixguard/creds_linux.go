package unixguard

import (
	"runtime"
	"sync"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/sys/unix"
)

// asUser runs the guard's system calls on OS threads that carry one
// sandbox user's credentials, for a root engine (see "As whom" in the
// package doc). Threads start on demand, up to maxThreads per user (no
// run has more than maxInFlight of them at once), and serve for the
// engine's whole life: a thread that ended would take
// along every process it had started with a parent-death signal (bwrap's
// --die-with-parent is tied to the thread that forked it, and the thread
// may have done that before it was locked for the guard).
type asUser struct {
	cred backends.Credential
	jobs chan func(ok bool)

	mu      sync.Mutex
	threads int
	broken  bool
}

const maxThreads = 64

var (
	usersMu sync.Mutex
	users   = map[backends.Credential]*asUser{}
)

// userThreads returns the threads of user c, shared by every run.
func userThreads(c backends.Credential) *asUser {
	usersMu.Lock()
	defer usersMu.Unlock()
	a := users[c]
	if a == nil {
		a = &asUser{cred: c, jobs: make(chan func(bool))}
		users[c] = a
	}
	return a
}

// run runs fn on one of the user's threads, without waiting for it; fn
// gets false when no thread could take the user's credentials (it must
// then refuse what it was to do).
func (a *asUser) run(fn func(ok bool)) {
	select {
	case a.jobs <- fn: // an idle thread took it
		return
	default:
	}
	switch a.grow() {
	case grown:
		go a.thread(fn)
	case full:
		a.jobs <- fn
	case broken:
		fn(false)
	}
}

type growth int

const (
	grown growth = iota
	full
	broken
)

func (a *asUser) grow() growth {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.broken:
		return broken
	case a.threads >= maxThreads:
		return full
	}
	a.threads++
	return grown
}

// thread serves jobs on a locked OS thread with the user's credentials.
// It never unlocks and never returns (see asUser): no other goroutine
// ever runs on this thread.
func (a *asUser) thread(job func(bool)) {
	runtime.LockOSThread()
	if err := setThreadCreds(a.cred); err != nil {
		a.mu.Lock()
		a.broken = true
		a.mu.Unlock()
		job(false)
		select {} // the thread's credentials are unknown: it stays parked
	}
	for {
		job(true)
		job = <-a.jobs
	}
}

// setThreadCreds gives the calling thread, and only it, the user's
// credentials: no supplementary groups, and the gid and uid as real,
// effective and saved ids (so no way back), which also clears its
// capabilities. These are the raw system calls: Go's own Setuid and
// friends change every thread of the process.
func setThreadCreds(c backends.Credential) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return e
	}
	g := uintptr(c.GID)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, g, g, g); e != 0 {
		return e
	}
	u := uintptr(c.UID)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, u, u, u); e != 0 {
		return e
	}
	return nil
}
