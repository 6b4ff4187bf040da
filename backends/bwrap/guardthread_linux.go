package bwrap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/unixguard"
	"golang.org/x/sys/unix"
)

// unixGuardPolicy is the guard's policy for spec's run.
func unixGuardPolicy(spec *backends.Spec) unixguard.Policy {
	return unixguard.Policy{Workspace: spec.Workspace, Sockets: spec.UnixGuard.Sockets, User: spec.User}
}

// directGuard is the guard that the engine loads itself for a run
// (unixguard.Direct), with the thread that loads it and starts bwrap.
type directGuard struct {
	*unixguard.Direct
	thread *guardThread
	// netns, when set, is the fresh network namespace the thread joins
	// before it forks bwrap (netnsPool), which then makes none.
	netns *os.File
}

// Close lets go of what Start did not use.
func (d *directGuard) Close() {
	d.Direct.Close()
	d.thread.release()
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
// filter needs then, would take its privileges).
func directUnixGuard(spec *backends.Spec, bin string) (*directGuard, error) {
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
	return &directGuard{Direct: d, thread: t}, nil
}

// guardThread is an OS thread of the engine's own that does one job whose
// changes to the thread must reach nothing else of the engine, and ends
// with it (its goroutine returns locked, which makes the Go runtime end
// it; the runtime clones no thread from a locked one): it starts one bwrap
// under the run's Unix socket guard and nothing else (it loads the
// filter, so that bwrap and everything it runs inherit it and no other
// thread of the engine has it, and it ends once bwrap has), or it makes
// a network namespace for the pool (makeNetns).
//
// A thread's children get their parent-death signal when the thread
// ends, whatever goroutine forked them: bwrap's --die-with-parent and
// Pdeathsig follow the thread. So the thread must have no child alive but
// its own bwrap when it ends: it is one that has none when it is taken
// (/proc/thread-self/children), and, locked, it forks nothing else.
type guardThread struct {
	jobs chan func()
	used bool
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
		if job := <-t.jobs; job != nil {
			job()
		}
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
	b, err := os.ReadFile("/proc/thread-self/children")
	return err == nil && len(bytes.TrimSpace(b)) == 0
}

// start runs job on the thread; release ends the thread unused.
func (t *guardThread) start(job func()) {
	t.used = true
	t.jobs <- job
}

func (t *guardThread) release() {
	if !t.used {
		t.used = true
		t.jobs <- nil
	}
}

// startGuarded runs fork, which starts cmd (bwrap) with the start
// function it is given, on the run's guardThread, which loads the Unix
// socket guard first; the thread then waits until bwrap has exited and
// ends. If the guard cannot be loaded, nothing is started.
func startGuarded(g *directGuard, cmd *exec.Cmd, fork func(start func() error) (bool, error)) (bool, error) {
	type result struct {
		inside bool
		err    error
	}
	done := make(chan result, 1)
	g.thread.start(func() {
		var r result
		if g.netns != nil {
			// bwrap's options have no --unshare-net: without this, nothing
			// may start (the run would be in the engine's network).
			if r.err = joinNetns(g.netns); r.err != nil {
				done <- r
				return
			}
		}
		pidfd := -1
		r.inside, r.err = fork(func() error {
			if err := g.Load(); err != nil {
				return &RefusedError{Reason: noGuard + err.Error()}
			}
			return cmd.Start()
		})
		if r.err == nil {
			// Before anyone may reap bwrap, so that the pid is its own.
			var err error
			if pidfd, err = unix.PidfdOpen(cmd.Process.Pid, 0); err != nil {
				r.inside, r.err = false, fmt.Errorf("watching bwrap from the thread that started it: %w", err)
				_ = cmd.Process.Kill()
			}
		}
		done <- r
		if pidfd >= 0 {
			waitExited(pidfd)
			unix.Close(pidfd)
		}
	})
	r := <-done
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
