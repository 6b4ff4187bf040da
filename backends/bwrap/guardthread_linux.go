package bwrap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
	"github.com/senclaw/sandbox/backends/unixguard"
	"golang.org/x/sys/unix"
)

// unixGuardPolicy is the guard's policy for spec's run.
func unixGuardPolicy(spec *backends.Spec) unixguard.Policy {
	pol := unixguard.Policy{Workspace: spec.Workspace, Sockets: spec.UnixGuard.Sockets, User: spec.User}
	var trace func(unixguard.Connect)
	if spec.Trace != nil {
		trace = traceConnects(spec)
	}
	if trace != nil || spec.Refused != nil {
		pol.Observe = func(c unixguard.Connect) {
			if trace != nil {
				trace(c)
			}
			if spec.Refused != nil && c.Refused {
				spec.Refused(c.Target)
			}
		}
	}
	return pol
}

// directGuard is the guard that the engine loads itself for a run
// (unixguard.Direct), with the thread that loads it and starts bwrap.
type directGuard struct {
	*unixguard.Direct
	thread *guardThread
	// netns, when set, is the fresh network namespace the thread joins
	// before it forks bwrap (aheadNetns), which then makes none.
	netns *os.File
	// ahead is where netns came from, which the run's end refills.
	ahead *aheadNetns
	// cmds takes the command to fork, started tells how it went, left is
	// closed once the thread is out of the run's cgroups (prepare).
	cmds    chan *exec.Cmd
	started chan guardedStart
	left    chan struct{}
}

// Close lets go of what Start did not use: a thread that never forked
// gives up, and Close returns once it is out of the run's cgroups (which
// the caller may then remove).
func (d *directGuard) Close() {
	d.Direct.Close()
	select {
	case d.cmds <- nil:
	default: // fork took it
	}
	<-d.left
	if d.netns != nil {
		d.netns.Close()
	}
}

// directUnixGuard prepares the guard that the engine loads itself
// (unixguard.Direct) when spec's run has the guard and nothing else the
// forwarder does: no network plumbing, no terminal, no trace (strace
// would run bwrap, and the forwarder's handoff keeps what the trace says
// as it was). It spares the run the forwarder's start, a Go program's,
// about a millisecond. Nil when the run goes through the forwarder: also
// when no thread fit for it was found (newGuardThread), and for a setuid
// bwrap that a non-root engine runs (no_new_privs, which the engine's
// filter needs then, would take its privileges). Its thread starts on its
// job at once (prepare), with the run's plan.
func directUnixGuard(spec *backends.Spec, bin string, plan func() (*limits.Plan, error)) (*directGuard, error) {
	if spec.UnixGuard == nil || spec.Net != nil || spec.Terminal != nil || spec.Trace != nil || !threadChildrenListed() {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		if fi, err := os.Stat(bin); err != nil || fi.Mode()&os.ModeSetuid != 0 {
			return nil, nil
		}
	}
	d, err := unixguard.NewDirect(unixGuardPolicy(spec))
	if err != nil {
		return nil, &RefusedError{Reason: err.Error()}
	}
	t := newGuardThread()
	if t == nil {
		return nil, nil
	}
	g := &directGuard{Direct: d, thread: t}
	g.prepare(plan)
	return g, nil
}

// guardThread is an OS thread of the engine's own that does one job whose
// changes to the thread must reach nothing else of the engine, and ends
// with it (its goroutine returns locked, which makes the Go runtime end
// it; the runtime clones no thread from a locked one): it starts one bwrap
// under the run's Unix socket guard and nothing else (it loads the
// filter, so that bwrap and everything it runs inherit it and no other
// thread of the engine has it, and it ends once bwrap has), or it makes
// a network namespace made ahead (makeNetns).
//
// A thread's children get their parent-death signal when the thread
// ends, whatever goroutine forked them: bwrap's --die-with-parent and
// Pdeathsig follow the thread. So the thread must have no child alive but
// its own bwrap when it ends: it is one that has none when it is taken
// (/proc/thread-self/children), and, locked, it forks nothing else.
type guardThread struct {
	jobs chan func()
}

// maxThreadTries bounds the threads newGuardThread looks at: the ones it
// turns down stay locked meanwhile, so the runtime makes a new one once
// the idle ones are used up.
const maxThreadTries = 64

// threadChildrenListed reports whether the kernel lists a thread's
// children (CONFIG_PROC_CHILDREN), which newGuardThread needs.
var threadChildrenListed = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/thread-self/children")
	return err == nil
})

// newGuardThread finds a thread fit to be a guardThread and keeps it
// waiting for its one job (start); nil if none was found.
func newGuardThread() *guardThread {
	t := &guardThread{jobs: make(chan func())}
	found, searched := make(chan bool), make(chan struct{})
	go t.try(found, searched, maxThreadTries)
	ok := <-found
	close(searched)
	if !ok {
		return nil
	}
	return t
}

// try locks the goroutine's thread and takes it if it is not the main
// thread (which the runtime never ends) and has no child; else it keeps
// it locked, so that the next try lands on another, until the search is
// over.
func (t *guardThread) try(found chan<- bool, searched <-chan struct{}, left int) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() && childless() {
		found <- true
		(<-t.jobs)()
		return // locked: the runtime ends the thread
	}
	if left > 1 {
		go t.try(found, searched, left-1)
	} else {
		found <- false
	}
	<-searched
	runtime.UnlockOSThread()
}

// childless reports whether the calling thread has no child.
func childless() bool {
	f, err := os.Open("/proc/thread-self/children")
	if err != nil {
		return false
	}
	defer f.Close()
	var b [64]byte
	n, err := f.Read(b[:])
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return len(bytes.TrimSpace(b[:n])) == 0
}

// start runs job on the thread, its one job.
func (t *guardThread) start(job func()) { t.jobs <- job }

// guardedStart is a result of the thread's fork: whether bwrap was born
// in the run's cgroups, or why it was not started.
type guardedStart struct {
	inside bool
	err    error
}

// prepare gives the run's thread its job early, while bwrap's command is
// still being made: it waits for the run's plan and joins the run's
// cgroups (limits.Cgroups.JoinThread), so that bwrap is born in them,
// then waits for fork's command (nil: Close, nothing to start). It leaves
// the cgroups once it has told fork how the start went, and then waits
// until bwrap has exited and ends.
func (d *directGuard) prepare(plan func() (*limits.Plan, error)) {
	d.cmds = make(chan *exec.Cmd, 1)
	d.started = make(chan guardedStart, 1)
	d.left = make(chan struct{})
	d.thread.start(func() { d.run(plan) })
}

// run is the thread's job (prepare).
func (d *directGuard) run(plan func() (*limits.Plan, error)) {
	var leave func() error
	var joinErr error
	if p, err := plan(); err == nil && p.Cgroups != nil {
		leave, joinErr = p.Cgroups.JoinThread()
	}
	cmd := <-d.cmds
	var r guardedStart
	switch {
	case cmd == nil:
	case joinErr != nil:
		r.err = joinErr
	case d.netns != nil:
		// bwrap's options have no --unshare-net: without this, nothing
		// may start (the run would be in the engine's network).
		r.err = joinNetns(d.netns)
	}
	if cmd != nil && r.err == nil {
		if err := d.Load(); err != nil {
			r.err = &RefusedError{Reason: noGuard + err.Error()}
		} else {
			r.err = cmd.Start()
		}
	}
	pidfd := -1
	if cmd != nil && r.err == nil {
		// Before anyone may reap bwrap, so that the pid is its own.
		var err error
		if pidfd, err = unix.PidfdOpen(cmd.Process.Pid, 0); err != nil {
			r.err = fmt.Errorf("watching bwrap from the thread that started it: %w", err)
			_ = cmd.Process.Kill()
		}
	}
	r.inside = r.err == nil && leave != nil
	if cmd != nil {
		d.started <- r
	}
	if leave != nil {
		// A thread that cannot leave ends with this job all the same.
		_ = leave()
	}
	close(d.left)
	if pidfd >= 0 {
		waitExited(pidfd)
		unix.Close(pidfd)
	}
	if d.netns != nil {
		d.ahead.refill() // the run is over: the next one's, meanwhile
	}
}

// fork starts cmd (bwrap) from the run's thread (prepare), which loads
// the Unix socket guard first, and joins the run's network namespace when
// it has one; if either cannot be done, nothing is started. It reports
// whether bwrap was born in the run's cgroups.
func (d *directGuard) fork(cmd *exec.Cmd) (bool, error) {
	d.cmds <- cmd
	r := <-d.started
	return r.inside, r.err
}

// waitExited blocks until the process of pidfd has exited.
func waitExited(pidfd int) {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
