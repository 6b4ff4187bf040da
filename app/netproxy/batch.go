package netproxy

import (
	"crypto/tls"
	"io"
	"net"
	"sync"
)

// A TLS connection writes each record (at most 16 KiB) with a write of
// its own; a download relayed record by record costs the proxy a system
// call per record on each side. batchConn collects the records of one
// TLS write (heldWriter holds it for the write's length) and sends them
// with one write; readAhead reads the host's answer while the proxy
// writes the part before, so that each write has much to carry.

// batchConn is the connection under a TLS connection. While held, its
// writes are collected (up to batchMax) and sent when it is released.
type batchConn struct {
	net.Conn
	mu   sync.Mutex
	held bool
	buf  []byte
	err  error
}

// batchMax bounds what a held batchConn collects before it writes.
const batchMax = 128 << 10

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
	if cap(b.buf) > batchMax {
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

// readAhead reads a body in a goroutine of its own, a few chunks ahead of
// its reader, whose reads take all that has come. It holds at most
// aheadChunks chunks of aheadChunk bytes.
type readAhead struct {
	src    io.ReadCloser
	chunks chan []byte
	free   chan []byte
	stop   chan struct{}
	once   sync.Once
	done   chan struct{}
	err    error // set before done is closed
	cur    []byte
	back   []byte // the buffer cur is in, to give back
}

const (
	aheadChunk  = 32 << 10
	aheadChunks = 8
)

func newReadAhead(src io.ReadCloser) *readAhead {
	r := &readAhead{src: src, chunks: make(chan []byte, aheadChunks), free: make(chan []byte, aheadChunks+1), stop: make(chan struct{}), done: make(chan struct{})}
	go r.fill()
	return r
}

func (r *readAhead) fill() {
	defer close(r.done)
	for {
		var buf []byte
		select {
		case buf = <-r.free:
		default:
			buf = make([]byte, aheadChunk)
		}
		n, err := r.src.Read(buf[:cap(buf)])
		if n > 0 {
			select {
			case r.chunks <- buf[:n]:
			case <-r.stop:
				return
			}
		}
		if err != nil {
			r.err = err
			return
		}
	}
}

func (r *readAhead) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.cur) == 0 {
			if r.back != nil {
				select {
				case r.free <- r.back[:0]:
				default:
				}
				r.back = nil
			}
			var c []byte
			if n == 0 {
				select { // the first bytes: wait for them
				case c = <-r.chunks:
				case <-r.done:
					select {
					case c = <-r.chunks:
					default:
						return 0, r.err
					}
				}
			} else {
				select { // more: only what has come
				case c = <-r.chunks:
				default:
					return n, nil
				}
			}
			r.cur, r.back = c, c
		}
		m := copy(p[n:], r.cur)
		r.cur = r.cur[m:]
		n += m
	}
	return n, nil
}

// Close stops the reading ahead. It does not wait for a read under way,
// which may be blocked on the host: the connection is closed, which ends
// it, unless the body was read to its end.
func (r *readAhead) Close() error {
	r.once.Do(func() {
		close(r.stop)
		go r.src.Close()
	})
	return nil
}
