package netproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
)

// MaxHeadBytes bounds the head of every HTTP message the proxy reads, a
// sandbox's request (its request line and headers) and an upstream's
// answer alike. Outside http.Server no MaxHeaderBytes applies, and
// http.ReadRequest reads a line whole however long it is: one sandbox
// sending a header line that never ends grew the engine by gigabytes.
// 64 KiB is more than browsers and servers use (nginx allows 32 KiB).
const MaxHeadBytes = 64 << 10

// maxHeadLines bounds the lines of a head: each header costs the parser
// far more than its few bytes.
const maxHeadLines = 256

var errHeadTooLarge = fmt.Errorf("larger than %d KiB or %d lines", MaxHeadBytes>>10, maxHeadLines)

// bufferHead waits until br holds a whole message head, up to its empty
// line, so that http.ReadRequest and http.ReadResponse parse from the
// buffer alone. br must be at least MaxHeadBytes large. A head that does
// not end within the bounds is errHeadTooLarge; nothing beyond them is
// read.
func bufferHead(br *bufio.Reader) error {
	if br.Size() < MaxHeadBytes {
		return errors.New("the proxy's reader is smaller than MaxHeadBytes")
	}
	scanned, lineStart, lines := 0, 0, 0
	for {
		buf, err := br.Peek(br.Buffered())
		for ; scanned < len(buf); scanned++ {
			if buf[scanned] != '\n' {
				continue
			}
			if len(bytes.TrimSuffix(buf[lineStart:scanned], []byte("\r"))) == 0 {
				return nil // the empty line that ends the head
			}
			if lines++; lines > maxHeadLines {
				return errHeadTooLarge
			}
			lineStart = scanned + 1
		}
		if err != nil {
			return err
		}
		if len(buf) >= MaxHeadBytes {
			return errHeadTooLarge
		}
		if _, err := br.Peek(len(buf) + 1); err != nil {
			return err
		}
	}
}
