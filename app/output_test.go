package app

import (
	"bytes"
	"fmt"
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
