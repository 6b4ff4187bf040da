// Package mux carries many byte streams both ways over one byte pipe.
//
// A sandbox on another machine's Docker engine reaches the engine's proxy,
// and the engine reaches its listen ports, over the stdin and stdout of one
// exec of the forwarder (its relay role): the Docker API offers no other
// way in or out of a container with no network. Each stream has its own
// flow control (a window of bytes the receiver has room for), so a slow
// reader holds up only its own stream, and neither side ever buffers more
// than a window per stream. Either side may open streams (the engine's are
// even, the container's odd). The peer is not trusted: a frame that breaks
// the protocol ends the session.
//
// A frame is a 9-byte head (kind, stream id, payload length, big-endian)
// and its payload.
package mux

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Frame kinds.
const (
	kindOpen   = 1 // a new stream; the payload says where to (at most MaxMeta bytes)
	kindData   = 2 // bytes of a stream (at most MaxData)
	kindFin    = 3 // the sender writes no more on the stream
	kindClose  = 4 // the sender neither writes nor reads the stream any more
	kindWindow = 5 // 4 bytes: how many more bytes the receiver has room for
	kindHello  = 6 // stream 0: the sender is ready; the payload is a word
)

// Bounds of the protocol.
const (
	// MaxData is the largest payload of a data frame.
	MaxData = 32 << 10
	// Window is how many unread bytes a stream may hold on its receiving
	// side; the sender waits for room beyond it.
	Window = 256 << 10
	// MaxMeta bounds an open frame's words.
	MaxMeta = 256
	// MaxStreams bounds the streams the peer may have open at once.
	MaxStreams = 1024
	headSize   = 9
)

// ErrSessionClosed is the error of a stream whose session ended.
var ErrSessionClosed = errors.New("the relay's session ended")

// Session is one end of a multiplexed pipe.
type Session struct {
	r  *bufio.Reader
	wc io.Writer

	wmu sync.Mutex
	wb  []byte

	mu       sync.Mutex
	streams  map[uint32]*Stream
	next     uint32 // the id of the next stream this side opens
	lastPeer uint32 // the highest id the peer opened
	peerOpen int    // streams the peer opened that are still here
	err      error

	accepts chan *Stream
	hello   chan string
	done    chan struct{}
}

// New starts a session reading frames from r and writing them to w.
// even is true on the engine's side (its streams have even ids).
func New(r io.Reader, w io.Writer, even bool) *Session {
	s := &Session{
		r: bufio.NewReaderSize(r, 64<<10), wc: w,
		streams: map[uint32]*Stream{}, next: 1,
		accepts: make(chan *Stream, 64), hello: make(chan string, 1), done: make(chan struct{}),
	}
	if even {
		s.next = 2
	}
	go s.readLoop()
	return s
}

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err says why the session ended (nil while it goes on).
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session and every stream of it. It does not close the
// pipe itself (its owner does).
func (s *Session) Close() error {
	s.fail(ErrSessionClosed)
	return nil
}

// Hello tells the peer that this side is ready, with a word.
func (s *Session) Hello(word string) error {
	if len(word) > MaxMeta {
		return errors.New("the hello is too long")
	}
	return s.writeFrame(kindHello, 0, []byte(word))
}

// WaitHello waits for the peer's hello until timeout.
func (s *Session) WaitHello(timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case w := <-s.hello:
		return w, nil
	case <-s.done:
		return "", s.Err()
	case <-t.C:
		return "", fmt.Errorf("the relay did not say it was ready within %s", timeout)
	}
}

// Open opens a stream to what meta names (the peer decides what that is).
func (s *Session) Open(meta string) (*Stream, error) {
	if len(meta) > MaxMeta {
		return nil, errors.New("the stream's words are too long")
	}
	// The peer takes only ids above the last it saw: the id is chosen
	// and its open frame written under the write lock, so that streams
	// opened at once reach the peer in the order of their ids.
	s.wmu.Lock()
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		s.wmu.Unlock()
		return nil, err
	}
	id := s.next
	s.next += 2
	st := newStream(s, id, meta)
	s.streams[id] = st
	s.mu.Unlock()
	err := s.writeFrameLocked(kindOpen, id, []byte(meta))
	s.wmu.Unlock()
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// Accept waits for a stream the peer opens.
func (s *Session) Accept() (*Stream, error) {
	select {
	case st := <-s.accepts:
		return st, nil
	case <-s.done:
		// Streams that came just before the end are dropped: the
		// session is gone for them too.
		return nil, s.Err()
	}
}

func (s *Session) fail(err error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = err
	list := make([]*Stream, 0, len(s.streams))
	for _, st := range s.streams {
		list = append(list, st)
	}
	s.mu.Unlock()
	close(s.done)
	for _, st := range list {
		st.sessionEnded()
	}
}

// writeFrame writes one whole frame.
func (s *Session) writeFrame(kind byte, id uint32, payload []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeFrameLocked(kind, id, payload)
}

// writeFrameLocked is writeFrame with s.wmu held.
func (s *Session) writeFrameLocked(kind byte, id uint32, payload []byte) error {
	if err := s.Err(); err != nil {
		return err
	}
	need := headSize + len(payload)
	if cap(s.wb) < need {
		s.wb = make([]byte, need, max(need, headSize+MaxData))
	}
	b := s.wb[:need]
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:5], id)
	binary.BigEndian.PutUint32(b[5:9], uint32(len(payload)))
	copy(b[headSize:], payload)
	if _, err := s.wc.Write(b); err != nil {
		s.fail(fmt.Errorf("writing to the relay: %w", err))
		return s.Err()
	}
	return nil
}

// control sends a frame from the reading side without waiting: the
// reader never blocks on the pipe's other direction.
func (s *Session) control(kind byte, id uint32, payload []byte) {
	go func() { _ = s.writeFrame(kind, id, payload) }()
}

func (s *Session) readLoop() {
	head := make([]byte, headSize)
	buf := make([]byte, MaxData)
	for {
		if _, err := io.ReadFull(s.r, head); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the relay's pipe ended inside a frame")
			} else if errors.Is(err, io.EOF) {
				err = ErrSessionClosed
			}
			s.fail(err)
			return
		}
		kind, id, n := head[0], binary.BigEndian.Uint32(head[1:5]), binary.BigEndian.Uint32(head[5:9])
		if err := s.checkFrame(kind, id, n); err != nil {
			s.fail(fmt.Errorf("the relay broke the protocol: %w", err))
			return
		}
		payload := buf[:n]
		if _, err := io.ReadFull(s.r, payload); err != nil {
			s.fail(errors.New("the relay's pipe ended inside a frame"))
			return
		}
		if err := s.handle(kind, id, payload); err != nil {
			s.fail(fmt.Errorf("the relay broke the protocol: %w", err))
			return
		}
	}
}

func (s *Session) checkFrame(kind byte, id, n uint32) error {
	switch kind {
	case kindData:
		if n > MaxData {
			return fmt.Errorf("a data frame of %d bytes", n)
		}
	case kindOpen, kindHello:
		if n > MaxMeta {
			return fmt.Errorf("words of %d bytes", n)
		}
	case kindWindow:
		if n != 4 {
			return fmt.Errorf("a window frame of %d bytes", n)
		}
	case kindFin, kindClose:
		if n != 0 {
			return fmt.Errorf("a close frame with %d bytes", n)
		}
	default:
		return fmt.Errorf("an unknown frame kind %d", kind)
	}
	if (kind == kindHello) != (id == 0) {
		return fmt.Errorf("stream id %d for frame kind %d", id, kind)
	}
	return nil
}

func (s *Session) handle(kind byte, id uint32, payload []byte) error {
	switch kind {
	case kindHello:
		select {
		case s.hello <- string(payload):
		default:
		}
		return nil
	case kindOpen:
		return s.opened(id, string(payload))
	}
	s.mu.Lock()
	st := s.streams[id]
	s.mu.Unlock()
	if st == nil {
		// A stream this side closed already: what was on its way is
		// dropped. An id never opened at all breaks the protocol.
		if s.ownID(id) && id < s.nextID() || !s.ownID(id) && id <= s.lastPeerID() {
			return nil
		}
		return fmt.Errorf("a frame for stream %d, which was never opened", id)
	}
	switch kind {
	case kindData:
		return st.received(payload)
	case kindWindow:
		st.granted(binary.BigEndian.Uint32(payload))
	case kindFin:
		st.peerFin(false)
	case kindClose:
		st.peerFin(true)
	}
	return nil
}

func (s *Session) ownID(id uint32) bool { return id%2 == s.parity() }

func (s *Session) parity() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next % 2
}

func (s *Session) nextID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

func (s *Session) lastPeerID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastPeer
}

// opened takes a stream the peer opened.
func (s *Session) opened(id uint32, meta string) error {
	s.mu.Lock()
	if id%2 == s.next%2 || id <= s.lastPeer {
		s.mu.Unlock()
		return fmt.Errorf("the peer opened stream %d, which is not a new id of its own", id)
	}
	s.lastPeer = id
	if s.peerOpen >= MaxStreams {
		s.mu.Unlock()
		s.control(kindClose, id, nil)
		return nil
	}
	st := newStream(s, id, meta)
	st.peerOpened = true
	s.streams[id] = st
	s.peerOpen++
	s.mu.Unlock()
	select {
	case s.accepts <- st:
	default:
		// Nobody takes streams this fast: it is refused, not queued.
		st.Close()
	}
	return nil
}

func (s *Session) forget(st *Stream) {
	s.mu.Lock()
	if s.streams[st.id] == st {
		delete(s.streams, st.id)
		if st.peerOpened {
			s.peerOpen--
		}
	}
	s.mu.Unlock()
}

// Stream is one stream of a session. It is a net.Conn with half-close
// (CloseWrite), read and write deadlines.
type Stream struct {
	s          *Session
	id         uint32
	meta       string
	peerOpened bool

	mu   sync.Mutex
	cond *sync.Cond
	buf  []byte // received, not yet read
	// eof: the peer writes no more; reset: the peer reads no more either.
	eof, reset bool
	// finSent, closed: this side writes no more / is done with it.
	finSent, closed bool
	ended           bool // the session ended
	credit          int  // bytes this side may still send
	unacked         int  // bytes read since the last window given back
	rdl, wdl        time.Time
	rtimer, wtimer  *time.Timer
}

func newStream(s *Session, id uint32, meta string) *Stream {
	st := &Stream{s: s, id: id, meta: meta, credit: Window}
	st.cond = sync.NewCond(&st.mu)
	return st
}

// Meta is what the opener said the stream is for.
func (st *Stream) Meta() string { return st.meta }

func (st *Stream) received(p []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil
	}
	if st.eof {
		return fmt.Errorf("data on stream %d after its end", st.id)
	}
	if len(st.buf)+len(p) > Window {
		return fmt.Errorf("stream %d sent past its window", st.id)
	}
	st.buf = append(st.buf, p...)
	st.cond.Broadcast()
	return nil
}

func (st *Stream) granted(n uint32) {
	st.mu.Lock()
	if st.credit+int(n) <= 2*Window { // a peer that over-grants gains nothing
		st.credit += int(n)
	}
	st.cond.Broadcast()
	st.mu.Unlock()
}

func (st *Stream) peerFin(reset bool) {
	st.mu.Lock()
	st.eof = true
	if reset {
		st.reset = true
	}
	st.cond.Broadcast()
	st.mu.Unlock()
}

func (st *Stream) sessionEnded() {
	st.mu.Lock()
	st.ended, st.eof, st.reset = true, true, true
	st.cond.Broadcast()
	st.mu.Unlock()
}

// Read reads what the peer sent.
func (st *Stream) Read(p []byte) (int, error) {
	st.mu.Lock()
	for len(st.buf) == 0 {
		switch {
		case st.closed:
			st.mu.Unlock()
			return 0, net.ErrClosed
		case st.eof:
			st.mu.Unlock()
			return 0, io.EOF
		case !st.rdl.IsZero() && !time.Now().Before(st.rdl):
			st.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		}
		st.cond.Wait()
	}
	n := copy(p, st.buf)
	st.buf = st.buf[n:]
	if len(st.buf) == 0 {
		st.buf = nil
	}
	st.unacked += n
	var give uint32
	if st.unacked >= Window/2 && !st.eof {
		give, st.unacked = uint32(st.unacked), 0
	}
	st.mu.Unlock()
	if give > 0 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], give)
		_ = st.s.writeFrame(kindWindow, st.id, b[:])
	}
	return n, nil
}

// Write sends p, waiting for room on the peer's side.
func (st *Stream) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		st.mu.Lock()
		for st.credit == 0 && !st.closed && !st.finSent && !st.reset && (st.wdl.IsZero() || time.Now().Before(st.wdl)) {
			st.cond.Wait()
		}
		switch {
		case st.closed || st.finSent:
			st.mu.Unlock()
			return written, net.ErrClosed
		case st.ended:
			st.mu.Unlock()
			return written, ErrSessionClosed
		case st.reset:
			st.mu.Unlock()
			return written, io.ErrClosedPipe
		case st.credit == 0:
			st.mu.Unlock()
			return written, os.ErrDeadlineExceeded
		}
		n := min(len(p), st.credit, MaxData)
		st.credit -= n
		st.mu.Unlock()
		if err := st.s.writeFrame(kindData, st.id, p[:n]); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// CloseWrite tells the peer that nothing more comes; reading goes on.
func (st *Stream) CloseWrite() error {
	st.mu.Lock()
	if st.finSent || st.closed {
		st.mu.Unlock()
		return nil
	}
	st.finSent = true
	st.cond.Broadcast()
	st.mu.Unlock()
	return st.s.writeFrame(kindFin, st.id, nil)
}

// Close ends the stream both ways.
func (st *Stream) Close() error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil
	}
	st.closed = true
	st.buf = nil
	st.stopTimers()
	st.cond.Broadcast()
	st.mu.Unlock()
	st.s.forget(st)
	if st.s.Err() != nil {
		return nil
	}
	return st.s.writeFrame(kindClose, st.id, nil)
}

// Addr is a stream's address: the relay, and the stream's words.
type Addr struct{ Meta string }

// Network is "senclaw-relay".
func (Addr) Network() string { return "senclaw-relay" }

func (a Addr) String() string { return "relay:" + a.Meta }

// LocalAddr and RemoteAddr name the relay.
func (st *Stream) LocalAddr() net.Addr  { return Addr{st.meta} }
func (st *Stream) RemoteAddr() net.Addr { return Addr{st.meta} }

// SetDeadline sets both deadlines.
func (st *Stream) SetDeadline(t time.Time) error {
	_ = st.SetReadDeadline(t)
	return st.SetWriteDeadline(t)
}

// SetReadDeadline makes Read fail with os.ErrDeadlineExceeded at t.
func (st *Stream) SetReadDeadline(t time.Time) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.rdl = t
	st.rtimer = st.wake(st.rtimer, t)
	st.cond.Broadcast()
	return nil
}

// SetWriteDeadline makes a Write waiting for room fail at t.
func (st *Stream) SetWriteDeadline(t time.Time) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.wdl = t
	st.wtimer = st.wake(st.wtimer, t)
	st.cond.Broadcast()
	return nil
}

// wake arranges for the waiters to look again at t.
func (st *Stream) wake(old *time.Timer, t time.Time) *time.Timer {
	if old != nil {
		old.Stop()
	}
	if t.IsZero() {
		return nil
	}
	return time.AfterFunc(time.Until(t), func() {
		st.mu.Lock()
		st.cond.Broadcast()
		st.mu.Unlock()
	})
}

func (st *Stream) stopTimers() {
	for _, t := range []*time.Timer{st.rtimer, st.wtimer} {
		if t != nil {
			t.Stop()
		}
	}
}
