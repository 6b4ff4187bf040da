package netproxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"
)

// TestReviewAHelloInTinyRecordsIsReadOnce: a ClientHello sent a byte a
// record (64 KiB of them) was parsed again at each record: 1.4 s of the
// proxy's CPU for 64 KiB a sandbox sends, on each of its connections.
func TestReviewAHelloInTinyRecordsIsReadOnce(t *testing.T) {
	// a ClientHello header claiming 60000 bytes, sent 1 byte per record
	msg := append([]byte{1, 0, 0xea, 0x60}, make([]byte, 60000)...)
	var s []byte
	for _, b := range msg {
		s = append(s, 0x16, 3, 1, 0, 1, b)
		if len(s) > MaxHeadBytes-6 {
			break
		}
	}
	start := time.Now()
	name, isTLS, err := innerName(bufio.NewReaderSize(bytes.NewReader(s), MaxHeadBytes))
	took := time.Since(start)
	t.Logf("%d bytes in %d records: %v (%q %v %v)", len(s), len(s)/6, took, name, isTLS, err)
	if took > 200*time.Millisecond {
		t.Errorf("reading a ClientHello of %d one-byte records took %v", len(s)/6, took)
	}
}

// TestReviewAFragmentedHelloIsRead: Go's own ClientHello for api.test,
// cut into records of 7 bytes, is read for its name.
func TestReviewAFragmentedHelloIsRead(t *testing.T) {
	cc, sc := net.Pipe()
	go func() {
		tls.Client(cc, &tls.Config{ServerName: "API.test"}).Handshake()
	}()
	hdr := make([]byte, recordHeader)
	if _, err := io.ReadFull(sc, hdr); err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(sc, msg); err != nil {
		t.Fatal(err)
	}
	sc.Close()
	var s []byte
	for len(msg) > 0 {
		k := min(7, len(msg))
		s = append(s, 0x16, 3, 1, 0, byte(k))
		s = append(s, msg[:k]...)
		msg = msg[k:]
	}
	s = append(s, 0x14, 3, 3, 0, 1, 1) // then a change_cipher_spec
	name, isTLS, err := innerName(bufio.NewReaderSize(bytes.NewReader(s), MaxHeadBytes))
	if name != "api.test" || !isTLS || err != nil {
		t.Errorf("a ClientHello in records of 7 bytes: %q %v %v, want api.test", name, isTLS, err)
	}
}
