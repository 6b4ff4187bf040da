package netproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd"
)

// SOCKS5 reply codes (RFC 1928).
const (
	socksOK          = 0
	socksFailure     = 1
	socksNotAllowed  = 2
	socksHostUnreach = 4
	socksRefused     = 5
	socksNoCommand   = 7
	socksNoAddrType  = 8
)

// socks serves one SOCKS5 CONNECT, without authentication: the socket it
// came in on already says who is asking. Every field of the handshake has
// a one-byte length or a fixed size, so it reads at most 1+1+255 bytes of
// greeting and 4+1+255+2 of request into buffers of those sizes, under the
// 30 s read deadline handle set; the name then goes through the one
// normaliser (decide) like any other.
func (p *Proxy) socks(c net.Conn, br *bufio.Reader, id string) {
	fail := func(code byte) {
		_, _ = c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
		c.Close()
	}
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		c.Close()
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		c.Close()
		return
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == 0
	}
	if !noAuth {
		_, _ = c.Write([]byte{5, 0xff})
		c.Close()
		return
	}
	if _, err := c.Write([]byte{5, 0}); err != nil {
		c.Close()
		return
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil || req[0] != 5 {
		c.Close()
		return
	}
	var host string
	switch req[3] {
	case 1, 4:
		b := make([]byte, 4)
		if req[3] == 4 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(br, b); err != nil {
			c.Close()
			return
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.Unmap().String()
	case 3:
		n, err := br.ReadByte()
		if err != nil {
			c.Close()
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			c.Close()
			return
		}
		host = string(b)
	default:
		fail(socksNoAddrType)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		c.Close()
		return
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	if req[1] != 1 {
		fail(socksNoCommand) // only CONNECT: UDP is not forwarded
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	ctx := context.Background()
	ap, err := p.decide(ctx, id, host, port)
	if err != nil {
		var d *Denied
		if errors.As(err, &d) {
			fail(socksNotAllowed)
		} else {
			fail(socksHostUnreach)
		}
		return
	}
	if tg, look, err := p.lookInto(id, host, port, ap); err != nil {
		fail(socksNotAllowed)
		return
	} else if look {
		if _, err := c.Write([]byte{5, socksOK, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
			c.Close()
			return
		}
		p.intercept(withBuffer(c, br), tg)
		return
	}
	t, err := dial(ctx, ap)
	if err != nil {
		code := byte(socksFailure)
		if errors.Is(err, errConnRefused) {
			code = socksRefused
		}
		fail(code)
		return
	}
	if _, err := c.Write([]byte{5, socksOK, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Close()
		c.Close()
		return
	}
	if tg, look, err := p.lookInside(ctx, id, host, port, ap, c, br); err != nil || look {
		t.Close()
		if look {
			p.intercept(withBuffer(c, br), tg)
		} else {
			c.Close()
		}
		return
	}
	netfwd.Relay(withBuffer(c, br), t)
}
