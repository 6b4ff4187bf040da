package api

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/app/portowner"
)

// PortTakenError is a dashboard address another program holds. Foreign
// is set when a holder is another user's: a squatter may be waiting
// there for the owner's token, which clients configured for the port
// would send it.
type PortTakenError struct {
	Addr    string
	Holders []portowner.Holder
	Foreign bool
	// seen says that the holders could be listed (Linux).
	seen bool
}

func (e *PortTakenError) Error() string {
	who := portowner.Describe(e.Holders)
	if who == "" {
		who = "a program senclaw cannot see"
	}
	if e.Foreign {
		return fmt.Sprintf("%s is held by %s: another user's program may be waiting there for your token, which MCP clients and "+
			"scripts configured for that address would send it, so senclaw does not start on another port. Have that program "+
			"stopped (ask its owner, or as root: kill PID), or choose another address with --listen ADDR or SENCLAW_LISTEN=ADDR and "+
			"give your MCP clients the new one (senclaw mcp-config --write)", e.Addr, who)
	}
	return fmt.Sprintf("%s is held by %s; stop it (a second senclaw of yours: senclaw stop in its environment), or choose another "+
		"address with --listen ADDR or SENCLAW_LISTEN=ADDR", e.Addr, who)
}

// Unwrap lets errors.Is find EADDRINUSE.
func (e *PortTakenError) Unwrap() error { return syscall.EADDRINUSE }

// portTaken says who holds addr's port.
func portTaken(addr string) *PortTakenError {
	e := &PortTakenError{Addr: addr}
	_, p, _ := net.SplitHostPort(addr)
	port, err := strconv.Atoi(p)
	if err != nil {
		return e
	}
	var lerr error
	e.Holders, lerr = portowner.Holding(port)
	e.seen = lerr == nil
	for _, h := range e.Holders {
		if h.UID != os.Geteuid() {
			e.Foreign = true
		}
	}
	return e
}

// loopbackSquatted says who else holds the port of addr, a loopback
// address the engine now listens on, on another loopback address: a
// listener of 127.0.0.1 leaves [::1] free, and a client configured for
// localhost (as MCP clients often are) dials [::1] first where localhost
// is both. nil when no other user holds it there.
func loopbackSquatted(addr string) *PortTakenError {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
		return nil
	}
	taken := portTaken(addr)
	if !taken.Foreign {
		return nil
	}
	var theirs []portowner.Holder
	for _, h := range taken.Holders {
		hh, _, _ := net.SplitHostPort(h.Addr)
		if ip := net.ParseIP(hh); h.UID != os.Geteuid() && ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
			theirs = append(theirs, h)
		}
	}
	if len(theirs) == 0 {
		return nil
	}
	taken.Addr, taken.Holders = "port "+port+" of another loopback address than "+host, theirs
	return taken
}

// unseenRetry is how long listenDashboard waits before it tries a port
// again whose holder it could not see.
const unseenRetry = 50 * time.Millisecond

// listenDashboard opens the dashboard's TCP listener at o.Listen. When
// the port is taken: another user's holder refuses the start (or, with
// WithoutTCPIfSquatted, leaves TCP out, tl nil); one of this user's falls
// back to FallbackListen when there is one. note says what happened.
func (s *Server) listenDashboard(o DaemonOptions) (tl net.Listener, url, note string, err error) {
	tl, url, err = listenTCP(o)
	var taken *PortTakenError
	switch {
	case err == nil:
		if taken = loopbackSquatted(o.Listen); taken == nil {
			return tl, url, "", nil
		}
		tl.Close()
	case !errors.Is(err, syscall.EADDRINUSE):
		return nil, "", "", err
	default:
		taken = portTaken(o.Listen)
	}
	if len(taken.Holders) == 0 && taken.seen {
		// Every socket holding the port is in /proc/net/tcp: one not
		// there has gone since the bind failed, or comes and goes (a
		// squatter binding and closing in turn, to be missed). Try
		// again; a holder that still cannot be told is not known to be
		// this user's, so the port is never fallen back from.
		time.Sleep(unseenRetry)
		if tl, url, err = listenTCP(o); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			return tl, url, "", err
		}
		if taken = portTaken(o.Listen); len(taken.Holders) == 0 && taken.seen {
			taken.Foreign = true
		}
	}
	switch {
	case taken.Foreign && o.WithoutTCPIfSquatted:
		note = "the dashboard is not served over HTTP: " + taken.Error() + "; the window and the Unix socket work as ever"
		s.log.Warn("The dashboard's port is held by another user; serving the Unix socket only.", "addr", o.Listen, "holders", portowner.Describe(taken.Holders))
		return nil, "", note, nil
	case taken.Foreign || o.FallbackListen == "":
		return nil, "", "", taken
	}
	fb := o
	fb.Listen = o.FallbackListen
	if tl, url, err = listenTCP(fb); err != nil {
		return nil, "", "", err
	}
	note = fmt.Sprintf("%s is held by %s, so the dashboard listens on %s instead; clients configured for %s do not reach this engine: "+
		"stop that program (a second senclaw of yours: senclaw stop in its environment) or set --listen ADDR or SENCLAW_LISTEN=ADDR, "+
		"and give your MCP clients the address (senclaw mcp-config --write)", o.Listen, orUnseen(portowner.Describe(taken.Holders)), url, o.Listen)
	s.log.Warn("The dashboard's port is held by another program of this user; listening on another one.", "wanted", o.Listen, "url", url)
	return tl, url, note, nil
}

func orUnseen(who string) string {
	if who == "" {
		return "a program senclaw cannot see"
	}
	return who
}
