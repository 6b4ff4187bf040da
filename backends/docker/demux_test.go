package docker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// frame is one frame of a multiplexed stream.
func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 10_000) // 160 KB: more than one read
	cases := []struct {
		name           string
		stream         []byte
		oneByte        bool
		stdout, stderr string
		err            string
	}{
		{"interleaved", bytes.Join([][]byte{frame(1, "out1 "), frame(2, "err1 "), frame(1, "out2"), frame(2, "err2")}, nil), false, "out1 out2", "err1 err2", ""},
		{"split_into_bytes", bytes.Join([][]byte{frame(1, "hello "), frame(2, "oops"), frame(1, "world")}, nil), true, "hello world", "oops", ""},
		{"frame_bigger_than_a_read", bytes.Join([][]byte{frame(1, big), frame(2, big)}, nil), false, big, big, ""},
		{"big_frame_in_bytes", frame(1, big[:40_000]), true, big[:40_000], "", ""},
		{"stdin_frame_is_stdout", frame(0, "in"), false, "in", "", ""},
		{"empty_frames", bytes.Join([][]byte{frame(1, ""), frame(2, ""), frame(1, "x")}, nil), false, "x", "", ""},
		{"empty_stream", nil, false, "", "", ""},
		{"cut_in_header", frame(1, "abc")[:5], false, "", "", "unexpected EOF"},
		{"cut_in_payload", frame(1, "abcdef")[:11], false, "abc", "", "unexpected EOF"},
		{"claims_4GB", append([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, "short"...), false, "short", "", "unexpected EOF"},
		{"daemon_error", bytes.Join([][]byte{frame(1, "before"), frame(3, "exec failed\x1b[0m"), frame(1, "after")}, nil), false, "before", "", "exec failed"},
		{"raw_stream", []byte("plain text, not frames"), false, "", "", "unknown kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r io.Reader = bytes.NewReader(tc.stream)
			if tc.oneByte {
				r = iotest.OneByteReader(r)
			}
			var stdout, stderr bytes.Buffer
			n, err := demux(&stdout, &stderr, r)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr || n != int64(len(tc.stdout)+len(tc.stderr)) {
				t.Errorf("stdout %.40q (%d), stderr %.40q (%d), n %d", stdout.String(), stdout.Len(), stderr.String(), stderr.Len(), n)
			}
			if strings.Contains(fmt.Sprint(err), "\x1b") {
				t.Errorf("the daemon's control characters reached the error: %q", err)
			}
		})
	}
}

// A failing writer stops the copy with its error.
func TestDemux_writeError(t *testing.T) {
	t.Parallel()
	_, err := demux(failWriter{}, io.Discard, bytes.NewReader(frame(1, "x")))
	if err == nil || err.Error() != "closed" {
		t.Fatalf("err = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }
