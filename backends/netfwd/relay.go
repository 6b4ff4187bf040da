package netfwd

import (
	"io"
	"net"
	"sync"
)

// halfCloser is a connection whose sending side can be shut alone.
type halfCloser interface{ CloseWrite() error }

// Relay copies both ways between a and b until both directions are done,
// passing each end-of-stream on as a half-close, then closes both. What
// it holds is bounded whatever either end sends: each direction copies
// through io.Copy's one 32 KiB buffer (or the kernel's splice), and a
// slow reader only makes the writer wait. How many relays a sandbox has
// is the proxy's bound (netproxy.MaxConns).
func Relay(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, err := io.Copy(dst, src)
		if hc, ok := dst.(halfCloser); ok && err == nil {
			_ = hc.CloseWrite()
		} else {
			// An error on one side ends both: nothing more can be said.
			a.Close()
			b.Close()
		}
	}
	go pipe(a, b)
	go pipe(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
