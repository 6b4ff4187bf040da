package bwrap

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// aheadNetns holds network namespaces made ahead of the runs that take
// them. A network-off run gets a namespace of its own either way, with
// loopback alone: bwrap makes it (--unshare-net), or, for a run that the
// engine's own thread forks (directGuard.fork), that thread joins a fresh one
// from those made ahead just before the fork, and bwrap makes none. Making one
// costs about 0.6 ms of a bwrap run's setup here (bwrap with and without
// --unshare-net, farm-bench), which making them ahead moves off the run's path.
//
// Each namespace is taken by one run only and never given back: nothing
// of one run can wait in it for the next (a listener on its loopback, an
// abstract socket). Only a root engine can make them (CAP_SYS_ADMIN over
// the namespaces it joins); they belong to the host's user namespace, so
// the sandbox, whose user namespace is a child of it, holds no capability
// over its own network namespace (it cannot add an interface or bring
// loopback down), where with --unshare-net it holds them until bwrap drops
// them. When none is ready, or none can be made, the run gets bwrap's own.
type aheadNetns struct {
	mu      sync.Mutex
	ready   []*os.File
	filling bool
	// off: making one failed in a way that will not change (not root).
	off bool
	// make makes one namespace (makeNetns; tests replace it).
	make func() (*os.File, error)
}

// netnsReady is how many namespaces are kept made ahead: one for the next
// run and one for a run that starts beside it.
const netnsReady = 2

// netns are the engine's namespaces made ahead: they do not depend on
// the backend that takes them, so every Backend of the process shares
// them.
var netns = &aheadNetns{make: makeNetns}

// take returns a fresh network namespace for one run (the caller closes
// it), or nil when none is ready. They are made again when a run
// that took one ends (refill), while the engine waits for the next: made
// as a run's bwrap started, a namespace slowed that start (bwrap's fork
// and exec took 0.32-0.39 ms so, 0.24-0.25 ms with the refill at the
// run's end, timed in the daemon). Only when none is left are they made at
// once (a burst of runs, the first run).
func (p *aheadNetns) take() *os.File {
	if os.Geteuid() != 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return nil
	}
	var f *os.File
	if n := len(p.ready); n > 0 {
		f, p.ready = p.ready[n-1], p.ready[:n-1]
	}
	if len(p.ready) == 0 {
		p.startFill()
	}
	return f
}

// refill makes as many as netnsReady again, off the caller's path.
func (p *aheadNetns) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.off {
		p.startFill()
	}
}

// startFill starts fill unless there are enough or they are being made; p.mu is
// held.
func (p *aheadNetns) startFill() {
	if !p.filling && len(p.ready) < netnsReady {
		p.filling = true
		go p.fill()
	}
}

// fill makes namespaces until netnsReady are ready, or one cannot be made.
func (p *aheadNetns) fill() {
	for {
		f, err := p.make()
		p.mu.Lock()
		if err != nil {
			p.filling = false
			// EPERM and EINVAL will not change; another error (the
			// namespace limit reached) may: the next take tries again.
			p.off = errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL)
			p.mu.Unlock()
			return
		}
		p.ready = append(p.ready, f)
		if len(p.ready) >= netnsReady {
			p.filling = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}

// makeNetns makes a network namespace with loopback up and returns a
// handle of it. It does so on a guardThread, which stays in the namespace
// and ends with the job: a thread without children (one that ends kills
// the children it forked, by their parent-death signal) and never the
// main thread (which the runtime never ends, and whose namespaces
// /proc/self shows); the runtime starts no thread from a locked one.
func makeNetns() (*os.File, error) {
	t := newGuardThread()
	if t == nil {
		return nil, errors.New("making a network namespace: no engine thread without children to make it on")
	}
	type made struct {
		f   *os.File
		err error
	}
	ch := make(chan made, 1)
	t.start(func() {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- made{err: fmt.Errorf("making a network namespace: %w", err)}
			return
		}
		if err := loopbackUp(); err != nil {
			ch <- made{err: fmt.Errorf("bringing loopback up in a new network namespace: %w", err)}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net") // close-on-exec, as every descriptor Go opens
		ch <- made{f, err}
	})
	m := <-ch
	return m.f, m.err
}

// loopbackUp brings lo up in the calling thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// joinNetns moves the calling thread, locked, into the namespace of f.
func joinNetns(f *os.File) error {
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("joining the run's network namespace: %w", err)
	}
	return nil
}
