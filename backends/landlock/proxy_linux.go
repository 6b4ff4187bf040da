package landlock

import (
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd"
)

// How a Landlock sandbox reaches the engine's proxy. bwrap and Docker
// sandboxes have a network namespace of their own and reach it through
// a Unix socket bound into it (the per-sandbox socket is the sandbox's
// identity). A Landlock sandbox has the host's network and may not make
// Unix sockets, so each run gets its own door: a TCP listener on
// 127.0.0.1 at a port the kernel picks, relayed to its sandbox's proxy
// socket. The run's Landlock ruleset lets it connect to that one port and
// no other: another Landlock run cannot connect to it (its own ruleset
// names only its own door), bwrap and Docker sandboxes cannot reach the
// host's loopback at all. Every other process of this machine can, other
// users' included, and the proxy would connect for them as the engine
// with the sandbox's rules: so the door relays only a connection whose
// socket a process of the run holds (peer_linux.go) and closes the rest,
// which the sandbox's refusals count. What Landlock cannot do is tie the
// port to an address, so the engine answers the run's connect, bind and
// listen calls itself (unixguard's inet rules, seccomp user
// notification): a connect reaches the door's own address only, a listen
// port is bound on loopback only. On a kernel where that guard cannot
// run, the run may also connect to the door's port number on any other
// host, which the record's note says.

// maxRelays bounds the connections one run's door relays at once (the
// proxy bounds them per sandbox as well).
const maxRelays = 512

// proxyRelay is one run's door to its sandbox's proxy socket.
type proxyRelay struct {
	l    net.Listener
	port int
	// owner is who may use the door, once the run's first process is
	// there; until then no connection is the run's.
	owner   atomic.Pointer[doorOwner]
	refused func(from, why string)
	log     *slog.Logger
}

// doorOwner is the run a door belongs to: the uid its processes run as
// and how to list them.
type doorOwner struct {
	uid  uint32
	pids func() []int
}

func newProxyRelay(sock string, refused func(from, why string), log *slog.Logger) (*proxyRelay, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("opening the run's proxy port: %w", err)
	}
	r := &proxyRelay{l: l, port: l.Addr().(*net.TCPAddr).Port, refused: refused, log: log}
	go r.serve(sock)
	return r, nil
}

// setOwner gives the door to the run whose processes run as uid and
// are listed by pids.
func (r *proxyRelay) setOwner(uid uint32, pids func() []int) {
	r.owner.Store(&doorOwner{uid: uid, pids: pids})
}

func (r *proxyRelay) serve(sock string) {
	slots := make(chan struct{}, maxRelays)
	for {
		c, err := r.l.Accept()
		if err != nil {
			return // closed with the run
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			continue
		}
		go func() {
			defer func() { <-slots }()
			if from, why := r.check(c); why != "" {
				c.Close()
				r.log.Debug("A connection to a Landlock run's proxy door came from outside the run and was closed.", "port", r.port, "peer", c.RemoteAddr().String(), "from", from, "why", why)
				if r.refused != nil {
					r.refused(from, why)
				}
				return
			}
			up, err := net.DialTimeout("unix", sock, 5*time.Second)
			if err != nil {
				c.Close()
				return
			}
			netfwd.Relay(c, up)
		}()
	}
}

// check says whether c comes from the run: why is empty if it does, and
// says what was wrong otherwise; from names the peer's uid, or its
// address while that is unknown (a flood from one user is one name).
func (r *proxyRelay) check(c net.Conn) (from, why string) {
	peer := c.RemoteAddr().(*net.TCPAddr).AddrPort()
	from = peer.String()
	owner := r.owner.Load()
	if owner == nil {
		return from, "the run's door to the proxy was connected before the run started"
	}
	uid, inode, err := peerSocket(peer, c.LocalAddr().(*net.TCPAddr).AddrPort())
	if err != nil {
		return from, fmt.Sprintf("the peer's socket of this connection to the run's door to the proxy could not be found (%v)", err)
	}
	from = fmt.Sprintf("uid %d", uid)
	if uid != owner.uid {
		return from, fmt.Sprintf("a connection to the run's door to the proxy came from uid %d, not the run's uid %d", uid, owner.uid)
	}
	if !holds(owner.pids(), inode) {
		return from, "a connection to the run's door to the proxy came from a process outside the run"
	}
	return from, ""
}

// Close closes the door; relayed connections end with the proxy's side.
func (r *proxyRelay) Close() error { return r.l.Close() }
