package backends

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Handoff is a socket pair for the one exchange between the engine and a
// sandbox's first program before the command runs (the Unix socket
// guard's listener, the forwarder's privileged ports): the program
// inherits ChildEnd, the engine keeps the other end and reads it once,
// with Conn.
type Handoff struct {
	mine, theirs *os.File
}

// NewHandoff makes the socket pair; name names its ends.
func NewHandoff(name string) (*Handoff, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &Handoff{mine: os.NewFile(uintptr(fds[0]), name), theirs: os.NewFile(uintptr(fds[1]), name+"-child")}, nil
}

// ChildEnd is the descriptor the sandbox's first program gets. The caller
// closes it once the sandbox has its copy.
func (h *Handoff) ChildEnd() *os.File { return h.theirs }

// Mine is the engine's end, for options set before Conn.
func (h *Handoff) Mine() *os.File { return h.mine }

// Close gives up the handoff (a run that did not start); after Conn it
// does nothing.
func (h *Handoff) Close() {
	if h.mine != nil {
		h.mine.Close()
		h.mine = nil
	}
}

// Conn is the engine's end as a connection for the exchange; it can be
// had once. Reads and writes give up once ctx ends, exited is closed (the
// sandbox went away) or timeout passes, the earliest deadline of them;
// call stop once done.
func (h *Handoff) Conn(ctx context.Context, exited <-chan struct{}, timeout time.Duration) (conn *net.UnixConn, stop func(), err error) {
	if h.mine == nil {
		return nil, nil, errors.New("the handoff was closed")
	}
	c, err := net.FileConn(h.mine)
	h.Close()
	if err != nil {
		return nil, nil, err
	}
	conn, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, nil, fmt.Errorf("the handoff is not a Unix socket")
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-exited:
		case <-done:
			return
		}
		_ = conn.SetDeadline(time.Now())
	}()
	return conn, func() { close(done); conn.Close() }, nil
}
