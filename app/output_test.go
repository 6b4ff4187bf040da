package app

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestOutputRingKeepsTheLastBytesAtTheirOffsets: a foreground run's
// output ring, written in pieces of every size past its cap, answers
// each read with the bytes at their offset in the whole output, starting
// later only where the bytes were dropped.
func TestOutputRingKeepsTheLastBytesAtTheirOffsets(t *testing.T) {
	var all bytes.Buffer
	o := &outputRing{}
	for i := 0; all.Len() < 3*liveOutputCap; i++ {
		piece := bytes.Repeat([]byte(fmt.Sprintf("%d,", i)), i%997)
		if i == 40 {
			piece = bytes.Repeat([]byte("x"), liveOutputCap+5) // more than it keeps
		}
		all.Write(piece)
		o.Write(piece)
		for _, off := range []int64{0, int64(all.Len()) / 2, int64(all.Len()) - 10, -7} {
			data, at, size, done := o.read(off, 4096)
			if size != int64(all.Len()) || done {
				t.Fatalf("after %d bytes: size %d, done %v", all.Len(), size, done)
			}
			want := off
			if off < 0 {
				want = max(0, size+off)
			}
			if first := size - liveOutputCap; want < first {
				want = first
			}
			end := min(int(want)+4096, all.Len())
			if at != want || !bytes.Equal(data, all.Bytes()[want:end]) {
				t.Fatalf("after %d bytes, read at %d: got %d bytes at %d, want %d bytes at %d", all.Len(), off, len(data), at, end-int(want), want)
			}
		}
	}
	o.close()
	if _, _, _, done := o.read(0, 1); !done {
		t.Fatal("a closed ring does not say the run is over")
	}
}

// TestCappedBufferTakesAPipeAsWritesDo: a run's output copied from its
// pipe by os/exec (io.Copy, which takes ReadFrom) is kept as the same
// bytes written keep it, head, tail and the count of what was dropped,
// and the copy makes no 32 KiB buffer of its own for each stream.
func TestCappedBufferTakesAPipeAsWritesDo(t *testing.T) {
	want := newCappedBuffer(64<<10, nil)
	var stream bytes.Buffer
	for i := 0; stream.Len() < 300<<10; i++ {
		fmt.Fprintf(&stream, "line %d\n", i)
	}
	want.Write(stream.Bytes())
	var tee bytes.Buffer
	got := newCappedBuffer(64<<10, &tee)
	cmd := exec.Command("cat")
	cmd.Stdin, cmd.Stdout = bytes.NewReader(stream.Bytes()), got
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() || !got.Truncated() || tee.String() != stream.String() {
		t.Errorf("the pipe's copy kept %d bytes (truncated %v, tee %d), want %d as written", len(got.String()), got.Truncated(), tee.Len(), len(want.String()))
	}
	b := newCappedBuffer(OutputCap, nil)
	io.Copy(b, struct{ io.Reader }{bytes.NewReader(nil)}) // the pool has a buffer, as after a first run
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("hello"))
		w.Close()
		io.Copy(b, r)
		r.Close()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 8<<10 {
		t.Errorf("io.Copy from a pipe allocated %d bytes a copy, want no buffer of its own (< 8 KiB)", per)
	}
	if b.String() != strings.Repeat("hello", 10) {
		t.Errorf("kept %q, want hello 10 times", b.String())
	}
}
