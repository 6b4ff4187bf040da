package docker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The multiplexed stream of a container or exec without a terminal is a
// sequence of frames: an 8-byte header (the stream: 0 stdin, 1 stdout,
// 2 stderr, 3 the daemon's own error; three zero bytes; the payload's
// length, big-endian uint32) and the payload.
const (
	streamStdin  = 0
	streamStdout = 1
	streamStderr = 2
	streamSystem = 3
)

// maxSystemMessage bounds the daemon's error message read from a frame.
const maxSystemMessage = 4 << 10

// demux copies a multiplexed stream from r to stdout and stderr until it
// ends, and returns how many payload bytes it wrote. Frames may arrive in
// pieces of any size; a frame's payload is copied through a fixed buffer,
// whatever length its header claims (the official stdcopy.StdCopy grows
// its buffer to that length: 4 GiB for a hostile header). A stream cut
// inside a frame is io.ErrUnexpectedEOF; a frame of the daemon's own
// error ends the copy with that error.
func demux(stdout, stderr io.Writer, r io.Reader) (int64, error) {
	var (
		hdr     [8]byte
		buf     = make([]byte, 32<<10)
		written int64
	)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return written, nil
			}
			return written, err
		}
		size := int64(binary.BigEndian.Uint32(hdr[4:]))
		var w io.Writer
		switch hdr[0] {
		case streamStdin, streamStdout:
			w = stdout
		case streamStderr:
			w = stderr
		case streamSystem:
			msg := make([]byte, min(size, maxSystemMessage))
			if _, err := io.ReadFull(r, msg); err != nil {
				return written, io.ErrUnexpectedEOF
			}
			return written, fmt.Errorf("error from the daemon in the stream: %s", cleanMessage(string(msg)))
		default:
			return written, fmt.Errorf("the daemon's stream has a frame of unknown kind %d: it is not a multiplexed stream", hdr[0])
		}
		for size > 0 {
			n, err := r.Read(buf[:min(size, int64(len(buf)))])
			if n > 0 {
				m, werr := w.Write(buf[:n])
				written += int64(m)
				if werr != nil {
					return written, werr
				}
				if m < n {
					return written, io.ErrShortWrite
				}
				size -= int64(n)
			}
			if err != nil {
				if errors.Is(err, io.EOF) && size > 0 {
					return written, io.ErrUnexpectedEOF
				}
				if size > 0 {
					return written, err
				}
				if !errors.Is(err, io.EOF) {
					return written, err
				}
			}
		}
	}
}
