package bwrap

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestHeadWriterTakesAPipeWithoutABufferOfItsOwn: bwrap's stderr, copied
// from its pipe by io.Copy as os/exec does, reaches the run's stream once
// released, and the copy allocates no 32 KiB buffer of its own each time.
func TestHeadWriterTakesAPipeWithoutABufferOfItsOwn(t *testing.T) {
	var out bytes.Buffer
	h := newHeldWriter(&out)
	io.Copy(h, struct{ io.Reader }{bytes.NewReader(nil)}) // the pool has a buffer, as after a first run
	h.release(true)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("said "))
		w.Close()
		io.Copy(h, r)
		r.Close()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 8<<10 {
		t.Errorf("io.Copy from a pipe allocated %d bytes a copy, want no buffer of its own (< 8 KiB)", per)
	}
	if want := strings.Repeat("said ", 10); out.String() != want {
		t.Errorf("the stream got %q, want %q", out.String(), want)
	}
}
