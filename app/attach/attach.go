// Package attach is the wire format of an attached run's stdin, output,
// terminal and signals.
//
// It is the one bidirectional channel between a client (senclaw agent-shell;
// later an interactive shell in a sandbox) and the engine's API for a run's
// stdin, its output, its terminal's size and the signals its caller passes
// on.
//
// A client asks for it on a run route (POST /api/sandbox/agent-shell)
// with "Connection: Upgrade" and "Upgrade: senclaw-attach/1" and the
// route's JSON body; the server answers "101 Switching Protocols" (after
// the same authentication and Host/Origin checks as every API request)
// and from then on both sides send frames: one type byte, a big-endian
// uint32 length, then that many bytes of payload (at most MaxPayload).
//
// Client to server: FrameStdin (bytes for the command's stdin),
// FrameStdinEOF (no payload: stdin ended), FrameControl (JSON app.Control:
// a terminal size or a signal). Server to client: FrameStdout and
// FrameStderr (output bytes; a terminal's output comes as the stream of
// its first output descriptor), FrameStarted (JSON: the run's record once
// the command started), and one FrameResult last (JSON: {"result": ...}
// or {"error": ...}, as the streamed answer of the other run routes).
// The server closes the connection after FrameResult; a client that
// closes it first ends the run (the command is killed).
package attach

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Protocol is the Upgrade token.
const Protocol = "senclaw-attach/1"

// Frame types.
const (
	FrameStdin    byte = '0'
	FrameStdout   byte = '1'
	FrameStderr   byte = '2'
	FrameStdinEOF byte = 'e'
	FrameControl  byte = 'c'
	FrameStarted  byte = 's'
	FrameResult   byte = 'r'
)

// MaxPayload bounds one frame's payload; a longer one is a protocol error.
const MaxPayload = 1 << 20

// Writer writes frames; it is safe for concurrent use (stdout and stderr
// come from their own goroutines).
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Frame writes one frame, splitting a payload longer than MaxPayload.
func (fw *Writer) Frame(typ byte, payload []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	for first := true; first || len(payload) > 0; first = false {
		n := min(len(payload), MaxPayload)
		var hdr [5]byte
		hdr[0] = typ
		binary.BigEndian.PutUint32(hdr[1:], uint32(n))
		if _, err := fw.w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := fw.w.Write(payload[:n]); err != nil {
			return err
		}
		payload = payload[n:]
	}
	if f, ok := fw.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// JSON writes v as the payload of one frame.
func (fw *Writer) JSON(typ byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return fw.Frame(typ, data)
}

// Stream is an io.Writer whose writes become frames of typ.
func (fw *Writer) Stream(typ byte) io.Writer { return stream{fw, typ} }

type stream struct {
	fw  *Writer
	typ byte
}

func (s stream) Write(p []byte) (int, error) {
	if err := s.fw.Frame(s.typ, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Reader reads frames.
type Reader struct{ r *bufio.Reader }

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader {
	if br, ok := r.(*bufio.Reader); ok {
		return &Reader{br}
	}
	return &Reader{bufio.NewReader(r)}
}

// Next reads one frame. A payload over MaxPayload is an error: the peer
// does not speak this protocol, and the connection should be closed.
func (fr *Reader) Next() (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(fr.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxPayload {
		return 0, nil, fmt.Errorf("an attach frame of %d bytes, over the %d allowed", n, MaxPayload)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(fr.r, payload); err != nil {
		return 0, nil, err
	}
	return hdr[0], payload, nil
}
