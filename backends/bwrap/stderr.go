package bwrap

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/backends"
)

// headSize is how much of stderr is kept to recognise bwrap's own errors.
const headSize = 4096

// headWriter forwards stderr to w (if any) and keeps its first bytes, so
// that bwrap's own errors can be told from the command's.
//
// When the stream starts with bwrap's "bwrap: execvp NAME: ..." (the
// command could not be executed), that one line is replaced with the
// shell's way of saying it ("senclaw: not found in the sandbox: NAME"),
// and the run exits 127 (or 126) as a shell's would: the person sees one
// message, not bwrap's text and then the engine's. (A command that writes
// that very line first and exits 1 is told the same way; it could as well
// exit 127 itself, so nothing is gained by it.)
type headWriter struct {
	w  io.Writer
	mu sync.Mutex
	b  []byte
	// pending holds the start of the stream while it may still be
	// bwrap's execvp line.
	pending []byte
	decided bool
	// execFailed is the exit code a failed execvp stands for (127: not
	// found, 126: not executable), 0 when the command was executed.
	execFailed int
	// While holding (newHeldWriter), bwrap is still setting the sandbox
	// up and what comes is kept in held, not passed on: release says
	// whether it goes on (setup went well: it is the run's) or not (it is
	// bwrap's own failure, which the start's error tells, and a start
	// made again does not repeat it in the run's output). Past holdCap a
	// write waits for release.
	holding bool
	held    []byte
	freed   chan struct{}
	dropped bool // released without forward: nothing more goes on
}

// holdCap bounds what a headWriter keeps while holding.
const holdCap = 64 << 10

// newHeldWriter is a headWriter for w that holds until release.
func newHeldWriter(w io.Writer) *headWriter {
	return &headWriter{w: w, holding: true, freed: make(chan struct{})}
}

// release ends the holding: what was held goes on with forward, and is
// dropped without. Only the first call counts.
func (h *headWriter) release(forward bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.holding {
		return
	}
	held := h.held
	h.holding, h.held, h.dropped = false, nil, !forward
	if forward && len(held) > 0 {
		if out := h.pass(held); h.w != nil && len(out) > 0 {
			_, _ = h.w.Write(out) // under the lock: before any write after it
		}
	}
	close(h.freed)
}

// pass is what goes on now of p, the next bytes of the stream: all of
// them once the start is decided, else what decide lets through. Called
// with h.mu held.
func (h *headWriter) pass(p []byte) []byte {
	if h.decided {
		return p
	}
	h.pending = append(h.pending, p...)
	return h.decide(false)
}

// ReadFrom writes what r gives into h until r ends: os/exec copies
// bwrap's stderr pipe into h with io.Copy, which takes it, through a
// pooled buffer instead of one of 32 KiB of its own for each run.
func (h *headWriter) ReadFrom(r io.Reader) (int64, error) { return backends.ReadFrom(h, r) }

func (h *headWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	if n := headSize - len(h.b); n > 0 {
		h.b = append(h.b, p[:min(n, len(p))]...)
	}
	for h.holding {
		if len(h.held)+len(p) <= holdCap {
			h.held = append(h.held, p...)
			h.mu.Unlock()
			return len(p), nil
		}
		freed := h.freed
		h.mu.Unlock()
		<-freed
		h.mu.Lock()
	}
	if h.dropped {
		h.mu.Unlock()
		return len(p), nil
	}
	out := h.pass(p)
	h.mu.Unlock()
	if h.w == nil || len(out) == 0 {
		return len(p), nil
	}
	if _, err := h.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// decide looks at the pending start of the stream and returns what to
// pass on now; at the end of the stream (final) it passes everything.
func (h *headWriter) decide(final bool) []byte {
	const prefix = "bwrap: execvp "
	pend := h.pending
	switch {
	case len(pend) < len(prefix) && strings.HasPrefix(prefix, string(pend)) && !final:
		return nil // too early to tell
	case !bytes.HasPrefix(pend, []byte(prefix)):
	default:
		nl := bytes.IndexByte(pend, '\n')
		if nl < 0 && !final && len(pend) < headSize {
			return nil
		}
		if nl < 0 {
			nl = len(pend)
		}
		line := string(pend[len(prefix):nl])
		name, why, ok := strings.Cut(line, ": ")
		switch {
		case ok && why == "No such file or directory":
			h.execFailed = 127
			pend = append([]byte("senclaw: not found in the sandbox: "+name+"\n"), pend[min(nl+1, len(pend)):]...)
		case ok && why == "Permission denied":
			h.execFailed = 126
			pend = append([]byte("senclaw: not executable in the sandbox: "+name+"\n"), pend[min(nl+1, len(pend)):]...)
		}
	}
	h.decided, h.pending = true, nil
	return pend
}

// finish passes on what is still held back, at the end of the stream.
func (h *headWriter) finish() {
	h.mu.Lock()
	var out []byte
	if !h.decided {
		out = h.decide(true)
	}
	h.mu.Unlock()
	if h.w != nil && len(out) > 0 {
		_, _ = h.w.Write(out)
	}
}

// execLine reports whether the stream begins with bwrap's line of a
// failed execvp of the command (not found, not executable): bwrap had set
// the sandbox up.
func (h *headWriter) execLine() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	line, _, _ := strings.Cut(string(h.b), "\n")
	rest, ok := strings.CutPrefix(line, "bwrap: execvp ")
	return ok && (strings.HasSuffix(rest, ": No such file or directory") || strings.HasSuffix(rest, ": Permission denied"))
}

// failedExec is the exit code a failed execvp stands for, 0 if none.
func (h *headWriter) failedExec() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.execFailed
}

func (h *headWriter) head() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
}
