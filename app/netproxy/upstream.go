package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// upstream is the proxy's own connection to a looked-into host.
type upstream struct {
	key  string
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	// raw is the buffer under the TLS of conn (nil without TLS): what
	// the host sent that TLS has not read yet.
	raw *pooledReader
	// broken: the connection is not in a state another request may use.
	broken bool
	idle   time.Time
}

// requestBuffer is the buffer requests are written to a host through.
const requestBuffer = 64 << 10

// upstreams keeps the connections to looked-into hosts that their last
// request left usable, a few per sandbox and host, for the sandbox's
// next connection there: a client that opens a connection per request
// then does not cost a TLS handshake with the host each time.
type upstreams struct {
	mu     sync.Mutex
	idle   map[string][]*upstream
	closed bool
}

// Bounds of the kept connections.
const (
	idlePerTarget = 4
	idleTargets   = 256
	idleFor       = 60 * time.Second
)

func targetKey(t target) string {
	return fmt.Sprintf("%s|%s|%s|%v", t.id, t.ap, t.host, t.tls)
}

// get returns a kept connection to t, or dials one: the address that was
// checked (the name is never resolved again), and for TLS a handshake
// that verifies the host's certificate with this machine's roots or the
// owner's pinned CA.
func (u *upstreams) get(p *Proxy, t target) (*upstream, error) {
	key := targetKey(t)
	now := time.Now()
	u.mu.Lock()
	for len(u.idle[key]) > 0 {
		l := u.idle[key]
		up := l[len(l)-1]
		u.idle[key] = l[:len(l)-1]
		if len(u.idle[key]) == 0 {
			delete(u.idle, key)
		}
		if now.Sub(up.idle) < idleFor {
			u.mu.Unlock()
			return up, nil
		}
		up.conn.Close()
	}
	u.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	raw, err := dial(ctx, t.ap)
	if err != nil {
		return nil, fmt.Errorf("SenClaw's proxy could not connect to %s (%s): %v", t.hostPort(), t.ap, err)
	}
	up := &upstream{key: key, conn: raw}
	w := net.Conn(raw)
	if t.tls {
		cfg := &tls.Config{ServerName: t.host, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
		if p.opts.UpstreamRoots != nil {
			cfg.RootCAs = p.opts.UpstreamRoots(t.host, t.port)
		}
		up.raw = &pooledReader{r: raw}
		bc := &batchConn{Conn: raw, rd: up.raw}
		tc := tls.Client(bc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			var ve *tls.CertificateVerificationError
			if errors.As(err, &ve) {
				return nil, fmt.Errorf("SenClaw's proxy refused %s: its certificate did not verify (%v); the proxy never skips verification (the owner can pin a CA for this host)", t.hostPort(), ve.Err)
			}
			return nil, fmt.Errorf("SenClaw's proxy could not speak TLS with %s: %v", t.hostPort(), err)
		}
		up.conn = tc
		up.bw = bufio.NewWriterSize(heldWriter{tc, bc}, requestBuffer)
	} else {
		up.bw = bufio.NewWriterSize(w, requestBuffer)
	}
	up.br = bufio.NewReaderSize(up.conn, MaxHeadBytes)
	return up, nil
}

// ready reports whether a read of the answer would not wait for the
// host: bytes read and not yet taken, or a whole TLS record under them.
// It may say no when a read would not wait (TLS keeps a little of its
// own); never yes when it would, but for a record that holds no data
// (a key update), which TLS reads past.
func (up *upstream) ready() bool {
	return up.br.Buffered() > 0 || up.raw != nil && up.raw.wholeRecord()
}

// put keeps up for the next request to its host, or closes it.
func (u *upstreams) put(up *upstream) {
	if up == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if up.broken || u.closed || up.br.Buffered() > 0 || len(u.idle[up.key]) >= idlePerTarget || len(u.idle) >= idleTargets && u.idle[up.key] == nil {
		up.conn.Close()
		return
	}
	if u.idle == nil {
		u.idle = map[string][]*upstream{}
	}
	up.idle = time.Now()
	u.idle[up.key] = append(u.idle[up.key], up)
}

// forget closes sandbox id's kept connections.
func (u *upstreams) forget(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, l := range u.idle {
		if strings.HasPrefix(k, id+"|") {
			for _, up := range l {
				up.conn.Close()
			}
			delete(u.idle, k)
		}
	}
}

// close closes every kept connection; none is kept after.
func (u *upstreams) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	for k, l := range u.idle {
		for _, up := range l {
			up.conn.Close()
		}
		delete(u.idle, k)
	}
}
