package app

import (
	"fmt"
	"io"
	"sync"
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
