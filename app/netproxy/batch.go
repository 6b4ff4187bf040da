package netproxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"sync"
)

// A TLS connection writes each record (at most 16 KiB) with a write of
// its own; a download relayed record by record costs the proxy a system
// call per record on each side. batchConn collects the records of one
// TLS write (heldWriter holds it for the write's length) and sends them
// with one write, and reads the host's records through a buffer, all
// that have come at once; answerBody writes the answer when what has
// come is read, so that each write has much to carry and none waits.

// batchConn is the connection under a TLS connection. While held, its
// writes are collected (up to batchMax) and sent when it is released.
type batchConn struct {
	net.Conn
	// rd, when set, is what reads read from: a buffer over Conn.
	rd   *pooledReader
	mu   sync.Mutex
	held bool
	buf  []byte
	err  error
}

// batchMax bounds what a held batchConn collects before it writes.
const batchMax = 256 << 10

// batchBufs are the buffers of held batchConns, taken for one write: a
// connection between writes holds none.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, batchMax); return &b }}

func (b *batchConn) Read(p []byte) (int, error) {
	if b.rd != nil {
		return b.rd.Read(p)
	}
	return b.Conn.Read(p)
}

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.held {
		return b.Conn.Write(p)
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(b.buf)+len(p) > batchMax {
		if err := b.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > batchMax {
			return b.Conn.Write(p)
		}
	}
	if b.buf == nil {
		b.buf = (*batchBufs.Get().(*[]byte))[:0]
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *batchConn) flushLocked() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.Conn.Write(b.buf)
	b.buf = b.buf[:0]
	if err != nil {
		b.err = err
	}
	return err
}

func (b *batchConn) hold() {
	b.mu.Lock()
	b.held = true
	b.mu.Unlock()
}

func (b *batchConn) release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = false
	err := b.flushLocked()
	if b.buf != nil {
		buf := b.buf[:0]
		batchBufs.Put(&buf)
		b.buf = nil
	}
	return err
}

// heldWriter writes to a TLS connection with its batchConn held: the
// records of one write go out in one.
type heldWriter struct {
	tc *tls.Conn
	bc *batchConn
}

func (w heldWriter) Write(p []byte) (int, error) {
	w.bc.hold()
	n, err := w.tc.Write(p)
	if ferr := w.bc.release(); err == nil && ferr != nil {
		return n, ferr
	}
	return n, err
}

// answerBody is the body of an answer being written through bw: before
// a read that would wait for the host it flushes what bw holds, so that
// the sandbox gets each part of an answer as soon as the host has sent
// it (a stream of events is not held back), and a download is written
// in writes as large as what has come.
type answerBody struct {
	io.ReadCloser
	bw *bufio.Writer
	up *upstream
}

func (a *answerBody) Read(p []byte) (int, error) {
	if a.bw.Buffered() > 0 && !a.up.ready() {
		if err := a.bw.Flush(); err != nil {
			return 0, err
		}
	}
	return a.ReadCloser.Read(p)
}

// pooledReader reads through a buffer of upstreamReadBuffer bytes taken
// from a pool while it holds what was read and not yet taken: a read
// takes all that has come, and an idle connection holds no buffer.
type pooledReader struct {
	r       io.Reader
	buf     *[]byte
	pending []byte
	err     error
}

// upstreamReadBuffer is the buffer under the TLS of a connection to a
// host: a read takes all the records that have come, up to this much,
// where TLS alone would read about one record at a time.
const upstreamReadBuffer = 256 << 10

var readBufs = sync.Pool{New: func() any { b := make([]byte, upstreamReadBuffer); return &b }}

func (p *pooledReader) Read(dst []byte) (int, error) {
	if len(p.pending) == 0 {
		if p.err != nil {
			return 0, p.err
		}
		if len(dst) >= upstreamReadBuffer {
			return p.r.Read(dst)
		}
		if p.buf == nil {
			p.buf = readBufs.Get().(*[]byte)
		}
		n, err := p.r.Read(*p.buf)
		p.pending, p.err = (*p.buf)[:n], err
		if n == 0 {
			p.giveBack()
			return 0, err
		}
	}
	n := copy(dst, p.pending)
	p.pending = p.pending[n:]
	if len(p.pending) == 0 {
		p.giveBack()
	}
	return n, nil
}

func (p *pooledReader) giveBack() {
	if p.buf != nil {
		readBufs.Put(p.buf)
		p.buf, p.pending = nil, nil
	}
}

// wholeRecord reports whether what p holds begins with a whole TLS
// record.
func (p *pooledReader) wholeRecord() bool {
	h := p.pending
	return len(h) >= recordHeader && len(h) >= recordHeader+(int(h[3])<<8|int(h[4]))
}

// recordHeader is the length of a TLS record's header: type, version
// and the length of what follows.
const recordHeader = 5
