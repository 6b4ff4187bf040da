package bwrap

import (
	"io"
	"sync"
)

// headSize is how much of stderr is kept to recognise bwrap's own errors.
const headSize = 4096

// headWriter forwards stderr to w (if any) and keeps its first bytes.
type headWriter struct {
	w  io.Writer
	mu sync.Mutex
	b  []byte
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	if n := headSize - len(h.b); n > 0 {
		h.b = append(h.b, p[:min(n, len(p))]...)
	}
	h.mu.Unlock()
	if h.w == nil {
		return len(p), nil
	}
	return h.w.Write(p)
}

func (h *headWriter) head() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
}
