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

// answerBody is the body of a short answer being written through bw:
// before a read that would wait for the host it flushes what bw holds,
// so that the sandbox gets each part of an answer as soon as the host
// has sent it.
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

// aheadBody is the body of a long answer (or one of unknown length)
// being written through bw. A goroutine of its own reads the host's
// answer (and decrypts it) while the one that writes to the sandbox
// encrypts and writes what came before: a download costs the slower of
// the two, not their sum. Before a read that would wait for the host it
// flushes what bw holds, so that the sandbox gets each part of an answer
// as soon as the host has sent it (a stream of events is not held back),
// and a download is written in writes as large as what has come.
type aheadBody struct {
	body io.ReadCloser
	bw   *bufio.Writer
	up   *upstream
	// full carries what the reader read, in order; the reader stops at
	// the first error (io.EOF at the end) or when stop is closed.
	full chan aheadChunk
	stop chan struct{}
	done chan struct{}
	cur  aheadChunk
	off  int
	once sync.Once
	// started says the reader runs: it starts at the first read, once
	// the answer's head is written, since at its end net/http's body sets
	// the answer's trailers (those the host did not announce too), which
	// writing the head reads.
	started bool
}

// aheadChunk is one part of an answer read ahead: n bytes of buf, then
// err (nil but at the end).
type aheadChunk struct {
	buf *[]byte
	n   int
	err error
}

// Bounds of what is read ahead: aheadChunks of at most aheadSize bytes,
// at most aheadChunks of them waiting to be written.
const (
	aheadSize   = 64 << 10
	aheadChunks = 4
)

var aheadBufs = sync.Pool{New: func() any { b := make([]byte, aheadSize); return &b }}

// newAheadBody is body, the answer of up, to be read ahead from its
// first read on.
func newAheadBody(body io.ReadCloser, bw *bufio.Writer, up *upstream) *aheadBody {
	return &aheadBody{body: body, bw: bw, up: up, full: make(chan aheadChunk, aheadChunks), stop: make(chan struct{}), done: make(chan struct{})}
}

// readAhead reads the answer into chunks: each takes what has come and
// does not wait for more (up.ready), so that a part the host sent alone
// is passed on alone.
func (a *aheadBody) readAhead() {
	defer close(a.done)
	for {
		c := a.readChunk()
		select {
		case a.full <- c:
		case <-a.stop:
			aheadBufs.Put(c.buf)
			return
		}
		if c.err != nil {
			return
		}
	}
}

// readChunk reads the next chunk: what has come, up to aheadSize.
func (a *aheadBody) readChunk() aheadChunk {
	b := aheadBufs.Get().(*[]byte)
	n, err := a.body.Read(*b)
	for err == nil && n < len(*b) && a.up.ready() {
		var m int
		m, err = a.body.Read((*b)[n:])
		n += m
	}
	return aheadChunk{buf: b, n: n, err: err}
}

// next makes a.cur hold what is to be written next, waiting for the
// reader if need be (what bw holds is written first), or returns the
// error that ends the answer (io.EOF at its end).
func (a *aheadBody) next() error {
	if !a.started {
		a.started = true
		go a.readAhead()
	}
	for a.off == a.cur.n {
		if a.cur.err != nil {
			return a.cur.err
		}
		a.giveBack()
		var ok bool
		select {
		case a.cur, ok = <-a.full:
		default:
			if a.bw.Buffered() > 0 {
				if err := a.bw.Flush(); err != nil {
					return err
				}
			}
			a.cur, ok = <-a.full
		}
		if !ok {
			return io.ErrClosedPipe
		}
		a.off = 0
	}
	return nil
}

func (a *aheadBody) Read(p []byte) (int, error) {
	if err := a.next(); err != nil {
		return 0, err
	}
	n := copy(p, (*a.cur.buf)[a.off:a.cur.n])
	a.off += n
	return n, nil
}

// WriteTo writes the rest of the answer to w, each part as it was read:
// no copy through a buffer of the caller's.
func (a *aheadBody) WriteTo(w io.Writer) (int64, error) { return a.writeTo(w, -1) }

// writeTo writes at most limit bytes of the answer (all of it when
// limit < 0) to w.
func (a *aheadBody) writeTo(w io.Writer, limit int64) (int64, error) {
	var written int64
	for limit < 0 || written < limit {
		if err := a.next(); err != nil {
			if err == io.EOF {
				err = nil
			}
			return written, err
		}
		part := (*a.cur.buf)[a.off:a.cur.n]
		if limit >= 0 && int64(len(part)) > limit-written {
			part = part[:limit-written]
		}
		n, err := w.Write(part)
		a.off += n
		written += int64(n)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// answerWriter writes answers to the sandbox: small writes (a head, a
// chunk's size) are collected in bw, and a large one, once what bw holds
// is written, goes straight to the connection under bw (w) rather than
// being copied into bw first.
type answerWriter struct {
	bw *bufio.Writer
	w  io.Writer
}

// directWrite is the size from which a write skips bw: a TLS record's.
const directWrite = 16 << 10

func (aw answerWriter) Write(p []byte) (int, error) {
	if len(p) < directWrite {
		return aw.bw.Write(p)
	}
	if err := aw.bw.Flush(); err != nil {
		return 0, err
	}
	return aw.w.Write(p)
}

// ReadFrom writes a body read ahead (net/http copies a body of known
// length through an io.LimitedReader) part by part, as WriteTo does;
// any other reader is copied as io.Copy would.
func (aw answerWriter) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if a, ok := lr.R.(*aheadBody); ok {
			n, err := a.writeTo(aw, lr.N)
			lr.N -= n
			return n, err
		}
	}
	return io.Copy(struct{ io.Writer }{aw}, r)
}

func (a *aheadBody) giveBack() {
	if a.cur.buf != nil {
		aheadBufs.Put(a.cur.buf)
		a.cur.buf = nil
	}
}

// Close stops the reader and waits for it: a reader still waiting for
// the host (the answer was not read to its end) is woken by closing the
// connection, which then serves no other request.
func (a *aheadBody) Close() error {
	a.once.Do(func() {
		if !a.started { // never read: the host's connection holds the answer
			a.up.broken = true
			a.up.conn.Close()
			return
		}
		close(a.stop)
		if a.cur.err == nil { // the reader may be waiting for the host
			select {
			case <-a.done:
			default:
				a.up.broken = true
				a.up.conn.Close()
			}
		}
		<-a.done
		a.giveBack()
		for len(a.full) > 0 {
			aheadBufs.Put((<-a.full).buf)
		}
	})
	return a.body.Close()
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
