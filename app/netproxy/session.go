package netproxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/senclaw/sandbox/backends/netfwd"
)

var errConnRefused = syscall.ECONNREFUSED

// session is a sandbox's plumbing while it has runs: the proxy socket in
// its directory and the host listeners of its listen ports.
type session struct {
	refs int
	// dir is an O_PATH handle: socket paths stay short however deep the
	// directory is. dirMu keeps close from closing it under a forward
	// that is opening a socket through it.
	dirMu sync.RWMutex
	dir   *os.File
	proxy net.Listener
	hosts map[int]net.Listener
	// dial, for a sandbox elsewhere (no directory: AcquireRelay), reaches
	// its listen port over the backend's link.
	dial func(port int) (net.Conn, error)
}

// PortInUseError is a listen port whose host side is taken.
type PortInUseError struct {
	Port int
	Err  error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("listen port %d: 127.0.0.1:%d is already in use on this machine, so it cannot be forwarded into the sandbox; stop what uses it or pick another port (%v)", e.Port, e.Port, e.Err)
}

// Acquire makes sure sandbox id's proxy socket answers in dir (an existing
// directory bound into the sandbox) and that 127.0.0.1:P on the host is
// forwarded for each listen port. Call the returned release when the run
// ends; the last release closes the session. A host port that cannot be
// bound is a *PortInUseError and nothing is acquired.
func (p *Proxy) Acquire(id, dir string, listen []int) (release func(), err error) {
	return p.acquire(id, listen, func() (*session, error) { return p.open(id, dir) })
}

// AcquireRelay is Acquire for a sandbox on another machine, which has no
// directory here: each connection it opens to the proxy comes over the
// backend's link and is given to serve (answered as one from the
// sandbox's socket would be, with its bound on connections), and
// 127.0.0.1:P on this machine reaches its listen port P through dial.
func (p *Proxy) AcquireRelay(id string, listen []int, dial func(port int) (net.Conn, error)) (serve func(net.Conn), release func(), err error) {
	var l *relayListener
	release, err = p.acquire(id, listen, func() (*session, error) {
		l = newRelayListener(id)
		go p.Serve(l, id)
		return &session{proxy: l, hosts: map[int]net.Listener{}, dial: dial}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if l == nil {
		// The session was there already (another run): its listener.
		p.mu.Lock()
		l, _ = p.sessions[id].proxy.(*relayListener)
		p.mu.Unlock()
	}
	if l == nil {
		release()
		return nil, nil, fmt.Errorf("sandbox %s's plumbing is a directory's, not a relay's", id)
	}
	return l.give, release, nil
}

func (p *Proxy) acquire(id string, listen []int, open func() (*session, error)) (release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sessions[id]
	fresh := s == nil
	if fresh {
		if s, err = open(); err != nil {
			return nil, err
		}
	}
	var added []int
	for _, port := range listen {
		if s.hosts[port] != nil {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			for _, a := range added {
				s.hosts[a].Close()
				delete(s.hosts, a)
			}
			if fresh {
				s.close()
			}
			return nil, &PortInUseError{Port: port, Err: err}
		}
		s.hosts[port] = l
		added = append(added, port)
		go p.forward(l, s, port)
	}
	if fresh {
		p.sessions[id] = s
	}
	s.refs++
	done := false
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if done {
			return
		}
		done = true
		s.refs--
		if s.refs == 0 {
			s.close()
			delete(p.sessions, id)
		}
	}, nil
}

// open starts the proxy socket of a session.
func (p *Proxy) open(id, dir string) (*session, error) {
	d, err := openDir(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox's network directory: %w", err)
	}
	s := &session{dir: d, hosts: map[int]net.Listener{}}
	sock := s.at(netfwd.ProxySocket)
	_ = os.Remove(sock) // left by an engine that died
	l, err := net.Listen("unix", sock)
	if err != nil {
		s.dir.Close()
		return nil, fmt.Errorf("opening the sandbox's proxy socket in %s: %w", dir, err)
	}
	// The directory is the sandbox user's and private (0700): the socket
	// itself may be open to all.
	if err := s.chmodIn(netfwd.ProxySocket, 0o666); err != nil {
		l.Close()
		s.dir.Close()
		return nil, fmt.Errorf("opening the sandbox's proxy socket: %w", err)
	}
	s.proxy = l
	go p.Serve(l, id)
	return s, nil
}

func (s *session) close() {
	if s.proxy != nil {
		s.proxy.Close()
	}
	for _, l := range s.hosts {
		l.Close()
	}
	s.dirMu.Lock()
	if s.dir != nil {
		s.dir.Close()
	}
	s.dirMu.Unlock()
}

// forward relays host connections on l to the sandbox's listen port.
func (p *Proxy) forward(l net.Listener, s *session, port int) {
	sock := netfwd.ListenSocket(port)
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go func() {
			var in net.Conn
			var err error
			if s.dial != nil {
				in, err = s.dial(port)
			} else {
				in, err = s.dialIn(sock)
			}
			if err != nil {
				c.Close()
				return
			}
			netfwd.Relay(c, in)
		}()
	}
}

// Sessions lists the sandboxes with open plumbing (tests, diagnostics).
func (p *Proxy) Sessions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for id := range p.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Close ends every session.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, s := range p.sessions {
		s.close()
		delete(p.sessions, id)
	}
	p.upstreams.close()
}

// WriteCABundle puts the CA bundle into a plumbing directory made by
// PrepareDir, through an os.Root of it (no link the sandbox planted is
// followed), into a file made exclusively (never one the sandbox put
// there, a FIFO that would block the write) and renamed over the old,
// so that a process reading the old one never reads half of the new.
func WriteCABundle(dir string, bundle []byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening the sandbox's network directory: %w", err)
	}
	defer root.Close()
	tmp := netfwd.CABundle + ".new"
	_ = root.Remove(tmp)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("writing the CA bundle: %w", err)
	}
	if _, err := f.Write(bundle); err != nil {
		f.Close()
		return fmt.Errorf("writing the CA bundle: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the CA bundle: %w", err)
	}
	if err := root.Rename(tmp, netfwd.CABundle); err != nil {
		return fmt.Errorf("writing the CA bundle: %w", err)
	}
	return nil
}

// PrepareDir makes a sandbox's plumbing directory (0700) with the Node
// preload in it; uid/gid >= 0 give it to the sandbox user.
func PrepareDir(dir string, uid, gid int) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return fmt.Errorf("creating the sandbox's network directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("the sandbox's network directory %s is not a directory", dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	// The directory may hold what the sandboxed code put there (a
	// container's processes can outlive a run): the preload is written
	// through an os.Root of it, so no symlink leads the write elsewhere.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening the sandbox's network directory: %w", err)
	}
	defer root.Close()
	_ = root.Remove(netfwd.NodePreload)
	if err := root.WriteFile(netfwd.NodePreload, []byte(netfwd.NodePreloadSource), 0o644); err != nil {
		return fmt.Errorf("writing the node preload: %w", err)
	}
	if uid >= 0 {
		if err := os.Lchown(dir, uid, gid); err != nil {
			return fmt.Errorf("giving the network directory to the sandbox user: %w", err)
		}
	}
	return nil
}

// relayListener is the proxy's listener of a sandbox elsewhere: the
// connections the backend's link brings are its Accept's.
type relayListener struct {
	id    string
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newRelayListener(id string) *relayListener {
	return &relayListener{id: id, conns: make(chan net.Conn), done: make(chan struct{})}
}

// give hands a connection to the proxy; after Close it is closed.
func (l *relayListener) give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *relayListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *relayListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr names the relay.
func (l *relayListener) Addr() net.Addr { return relayAddr(l.id) }

type relayAddr string

func (relayAddr) Network() string  { return "senclaw-relay" }
func (a relayAddr) String() string { return "relay:" + string(a) }
