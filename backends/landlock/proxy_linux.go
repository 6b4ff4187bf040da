package landlock

import (
	"fmt"
	"net"
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
// no other, so the port says which sandbox a connection comes from as far
// as sandboxes go: another Landlock run cannot connect to it (its own
// ruleset names only its own door), bwrap and Docker sandboxes cannot
// reach the host's loopback at all. Processes of the host outside every
// sandbox can, and get no more than they already have (the host's
// network). What Landlock cannot do is tie the port to an address, so
// the engine answers the run's connect, bind and listen calls itself
// (unixguard's inet rules, seccomp user notification): a connect reaches
// the door's own address only, a listen port is bound on loopback only.
// On a kernel where that guard cannot run, the run may also connect to
// the door's port number on any other host, which the record's note says.

// maxRelays bounds the connections one run's door relays at once (the
// proxy bounds them per sandbox as well).
const maxRelays = 512

// proxyRelay is one run's door to its sandbox's proxy socket.
type proxyRelay struct {
	l    net.Listener
	port int
}

func newProxyRelay(sock string) (*proxyRelay, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("opening the run's proxy port: %w", err)
	}
	r := &proxyRelay{l: l, port: l.Addr().(*net.TCPAddr).Port}
	go r.serve(sock)
	return r, nil
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
			up, err := net.DialTimeout("unix", sock, 5*time.Second)
			if err != nil {
				c.Close()
				return
			}
			netfwd.Relay(c, up)
		}()
	}
}

// Close closes the door; relayed connections end with the proxy's side.
func (r *proxyRelay) Close() error { return r.l.Close() }
