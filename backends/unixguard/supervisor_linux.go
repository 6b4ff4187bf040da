package unixguard

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Supervisor answers the connect() calls of one guarded run. It serves
// until no process of the run is left, or Close.
type Supervisor struct {
	listener *os.File
	raw      syscall.RawConn
	pl       *places
	named    []string
	observe  func(Connect)
	carrier  int
	// inet, when set, limits inet connects, binds and listens (Policy.Inet).
	inet *InetRules
	// as runs the answers with the sandbox user's credentials; nil when
	// the engine runs as that user.
	as *asUser
	// slots bounds the run's connects in progress: a blocking connect to
	// a socket whose backlog is full waits in the engine until the server
	// accepts, and no run may hold all of its user's threads that way.
	slots chan struct{}

	closeOnce sync.Once
	wg        sync.WaitGroup
}

const maxInFlight = 16

func newSupervisor(listener, carrier int, pl *places, pol Policy) (*Supervisor, error) {
	// Non-blocking, the listener joins the runtime's poller: no thread
	// waits for a run's notifications.
	if err := unix.SetNonblock(listener, true); err != nil {
		unix.Close(listener)
		return nil, fmt.Errorf("starting the Unix socket guard: %w", err)
	}
	f := os.NewFile(uintptr(listener), "unixguard-listener")
	raw, err := f.SyscallConn()
	if err == nil {
		// A file the poller could not take has no deadlines.
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the Unix socket guard: the listener cannot be polled: %w", err)
	}
	s := &Supervisor{listener: f, raw: raw, pl: pl, named: pol.Sockets, observe: pol.Observe, carrier: carrier, inet: pol.Inet, slots: make(chan struct{}, maxInFlight)}
	if u := pol.User; u != nil && (int(u.UID) != os.Geteuid() || int(u.GID) != os.Getegid()) {
		s.as = userThreads(*u)
	} else if os.Geteuid() == 0 {
		f.Close()
		return nil, errors.New("the Unix socket guard would connect as root: the sandbox user must be set")
	}
	// Wake the caller and the supervisor on the same CPU when one answers
	// the other (Linux 6.6; older kernels just do without).
	_ = raw.Control(func(fd uintptr) {
		one := uint64(unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
		_, _, _ = unix.Syscall(unix.SYS_IOCTL, fd, ioctlSetFlags, uintptr(unsafe.Pointer(&one)))
	})
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Close stops answering; connects still waiting fail (ENOSYS). It waits
// for the answers under way.
func (s *Supervisor) Close() {
	s.closeOnce.Do(func() {
		s.listener.Close()
	})
	s.wg.Wait()
}

// serve receives notifications while the listener is readable and has
// each answered as the sandbox user (dispatch); it ends when no task uses
// the filter any more (POLLHUP) or the listener is closed, once the
// answers under way are done.
func (s *Supervisor) serve() {
	var answers sync.WaitGroup
	defer func() {
		answers.Wait()
		s.closeOnce.Do(func() { s.listener.Close() })
		s.pl.close()
		s.wg.Done()
	}()
	for {
		over := false
		err := s.raw.Read(func(fd uintptr) bool {
			for {
				p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				n, err := unix.Poll(p, 0)
				switch {
				case errors.Is(err, unix.EINTR):
					continue
				case err != nil:
					over = true
					return true
				case n == 0:
					return false // wait for the poller
				case p[0].Revents&unix.POLLIN == 0:
					over = true // POLLHUP: the run is over
					return true
				}
				nt, err := recv(int(fd))
				if err != nil {
					if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINTR) {
						continue // the caller went away before we looked
					}
					over = true
					return true
				}
				s.slots <- struct{}{}
				answers.Add(1)
				s.dispatch(func(ok bool) {
					defer answers.Done()
					defer func() { <-s.slots }()
					s.answer(nt, ok)
				})
			}
		})
		if err != nil || over {
			return
		}
	}
}

// dispatch runs an answer with the sandbox user's credentials: on one of
// that user's threads for a root engine, else on a goroutine of its own.
// Everything an answer does (reading the caller, resolving, connecting)
// is done as that user.
func (s *Supervisor) dispatch(fn func(ok bool)) {
	if s.as != nil {
		s.as.run(fn)
		return
	}
	go fn(true)
}

// answer does the caller's connect and answers with its result; ok false
// refuses it (no thread could take the user's credentials).
func (s *Supervisor) answer(n notif, ok bool) {
	var errno unix.Errno
	var addr []byte
	switch {
	case ok && n.Data.Nr == unix.SYS_CONNECT:
		errno, addr, ok = s.connect(n)
	case ok && s.inet != nil && n.Data.Nr == unix.SYS_BIND:
		errno, ok = s.bind(n)
	case ok && s.inet != nil && n.Data.Nr == unix.SYS_LISTEN:
		errno, ok = s.listen(n)
	default:
		errno, ok = unix.EACCES, s.valid(n.ID)
	}
	if !ok {
		return // the caller is gone: nobody to answer
	}
	refused := errno == errGuard
	if refused {
		errno = unix.EACCES
	}
	_ = s.raw.Control(func(fd uintptr) {
		_ = send(int(fd), notifResp{ID: n.ID, Error: -int32(errno)})
	})
	if s.observe != nil {
		s.report(int(n.Pid), addr, errno, refused)
	}
}

// valid reports whether the notification still waits for its answer.
func (s *Supervisor) valid(id uint64) bool {
	ok := false
	_ = s.raw.Control(func(fd uintptr) { ok = idValid(int(fd), id) })
	return ok
}
