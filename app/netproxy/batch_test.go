package netproxy

import (
	"bytes"
	"io"
	"testing"
)

// TestPooledReaderSaysWhenARecordIsWhole: wholeRecord says yes only for a
// header and all the length it gives, and the reader hands on every byte
// in order, its error after them.
func TestPooledReaderSaysWhenARecordIsWhole(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		held []byte
		want bool
	}{
		{"empty", nil, false},
		{"part_of_a_header", []byte{23, 3, 3}, false},
		{"header_only", []byte{23, 3, 3, 0, 5}, false},
		{"short_by_one", append([]byte{23, 3, 3, 0, 5}, 1, 2, 3, 4), false},
		{"whole", append([]byte{23, 3, 3, 0, 5}, 1, 2, 3, 4, 5), true},
		{"whole_and_more", append([]byte{23, 3, 3, 0, 1}, 1, 23), true},
		{"long_length", append([]byte{23, 3, 3, 1, 5}, make([]byte, 0x105-1)...), false},
		{"long_whole", append([]byte{23, 3, 3, 1, 5}, make([]byte, 0x105)...), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &pooledReader{pending: c.held}
			if got := p.wholeRecord(); got != c.want {
				t.Errorf("wholeRecord of %d bytes = %v, want %v", len(c.held), got, c.want)
			}
		})
	}
	src := bytes.Repeat([]byte("0123456789"), 100000)
	p := &pooledReader{r: bytes.NewReader(src)}
	var got []byte
	buf := make([]byte, 7000)
	for {
		n, err := p.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, src) || p.buf != nil {
		t.Fatalf("read %d of %d bytes, equal %v; buffer kept after the end: %v", len(got), len(src), bytes.Equal(got, src), p.buf != nil)
	}
}
