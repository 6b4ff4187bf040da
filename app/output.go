package app

import (
	"fmt"
	"io"
	"sync"

	"github.com/senclaw/sandbox/backends"
)

// OutputCap is how much of each output stream a run keeps: the first and
// the last half, with the middle dropped and the run marked truncated.
const OutputCap = 1 << 20

// recordTail is how much of each stream the stored run record keeps.
const recordTail = 16 << 10

// cappedBuffer keeps the head and the tail of a stream and counts what it
// dropped. It is safe for the concurrent writes of a process's pipe copier
// and the reads of a caller that wants the output so far.
type cappedBuffer struct {
	mu      sync.Mutex
	limit   int
	head    []byte
	tail    []byte // ring of the last limit/2 bytes once head is full
	tailPos int
	tailed  bool
	total   int64
	tee     io.Writer
}

func newCappedBuffer(limit int, tee io.Writer) *cappedBuffer {
	return &cappedBuffer{limit: limit, tee: tee}
}

// setTee gives the buffer the writer it copies to (a run's stream), when
// it was made before the run had one (a sandbox made ahead).
func (b *cappedBuffer) setTee(w io.Writer) {
	b.mu.Lock()
	b.tee = w
	b.mu.Unlock()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tee != nil {
		_, _ = b.tee.Write(p) // a failing tee must not fail the run
	}
	n := len(p)
	b.total += int64(n)
	half := b.limit / 2
	if room := half - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(b.tail) < half {
			k := min(half-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		b.tailed = true
		k := copy(b.tail[b.tailPos:], p)
		b.tailPos = (b.tailPos + k) % half
		p = p[k:]
	}
	return n, nil
}

// ReadFrom writes what r gives into b until r ends: os/exec copies a
// run's output pipe into b with io.Copy, which takes it, through a
// pooled buffer (backends.ReadFrom) instead of one of 32 KiB of its own
// for each stream.
func (b *cappedBuffer) ReadFrom(r io.Reader) (int64, error) { return backends.ReadFrom(b, r) }

// Truncated reports whether bytes were dropped.
func (b *cappedBuffer) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total > int64(len(b.head)+len(b.tail))
}

// String returns what was kept, with a marker where bytes were dropped.
func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.tail
	if b.tailed {
		tail = append(append([]byte{}, b.tail[b.tailPos:]...), b.tail[:b.tailPos]...)
	}
	dropped := b.total - int64(len(b.head)+len(tail))
	if dropped <= 0 {
		return string(b.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes dropped ...]\n%s", b.head, dropped, tail)
}

// lastBytes returns at most n bytes from the end of s, cut at a rune start.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for i := 0; i < len(s) && i < 4; i++ {
		if s[i]&0xC0 != 0x80 {
			return s[i:]
		}
	}
	return s
}

// OutputKeeper keeps one output stream as a run keeps it (the first and
// the last half of OutputCap), for a face that received the output
// streamed: the MCP server, whose streamed answer does not repeat it.
type OutputKeeper struct{ b *cappedBuffer }

// NewOutputKeeper returns an empty OutputKeeper.
func NewOutputKeeper() *OutputKeeper { return &OutputKeeper{b: newCappedBuffer(OutputCap, nil)} }

// Write keeps p as a run's output would be kept.
func (k *OutputKeeper) Write(p []byte) (int, error) { return k.b.Write(p) }

// String is what was kept.
func (k *OutputKeeper) String() string { return k.b.String() }

// liveOutputCap is how much of a foreground run's output, both streams
// together, is kept for the readers of the run going on (`senclaw logs
// -f`); the record keeps each stream apart.
const liveOutputCap = 256 << 10

// outputRing keeps the last liveOutputCap bytes a foreground run wrote,
// its two streams in the order they came, each byte at its offset in the
// run's output: a reader that follows it knows what it missed.
type outputRing struct {
	mu    sync.Mutex
	buf   []byte // the last bytes; once full, a ring starting at start
	start int
	total int64
	done  bool
}

func (o *outputRing) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	o.total += int64(n)
	if len(p) >= liveOutputCap {
		o.buf, o.start = append(o.buf[:0], p[len(p)-liveOutputCap:]...), 0
		return n, nil
	}
	if room := liveOutputCap - len(o.buf); room > 0 {
		k := min(room, len(p))
		o.buf = append(o.buf, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(o.buf[o.start:], p)
		o.start = (o.start + k) % liveOutputCap
		p = p[k:]
	}
	return n, nil
}

// close says the run is over: nothing more comes.
func (o *outputRing) close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.done = true
	o.mu.Unlock()
}

// read returns up to limit bytes from offset (negative: from the end),
// from where they start (later than offset when those bytes are gone),
// the output's size so far, and whether the run is over.
func (o *outputRing) read(offset int64, limit int) (data []byte, at, size int64, done bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	size, done = o.total, o.done
	first := o.total - int64(len(o.buf))
	if offset < 0 {
		offset = max(0, size+offset)
	}
	at = min(max(offset, first), size)
	from := int(at - first)
	n := min(limit, len(o.buf)-from)
	data = make([]byte, 0, n)
	for i := from; i < from+n; {
		j := (o.start + i) % len(o.buf)
		k := min(from+n-i, len(o.buf)-j)
		data = append(data, o.buf[j:j+k]...)
		i += k
	}
	return data, at, size, done
}

// teeTo writes to each of ws that is set, ignoring their errors (a
// failing reader must not fail the run).
func teeTo(ws ...io.Writer) io.Writer {
	var set []io.Writer
	for _, w := range ws {
		if w != nil {
			set = append(set, w)
		}
	}
	switch len(set) {
	case 0:
		return nil
	case 1:
		return set[0]
	}
	return tee(set)
}

type tee []io.Writer

func (t tee) Write(p []byte) (int, error) {
	for _, w := range t {
		_, _ = w.Write(p)
	}
	return len(p), nil
}
