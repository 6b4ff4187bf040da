package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// A tunnel's name is the sandbox's word: an HTTP rule or a secret for
// api.example.org would be walked around by a CONNECT to the host's
// address, or to another name of it, with api.example.org as the TLS
// server name (or the Host) inside. So on a port an HTTP rule or a
// secret covers, a sandbox that has either is not tunnelled on the
// CONNECT's word alone: the proxy reads the client's first bytes (the
// TLS ClientHello's server name, or the Host of a plain request) and
// looks into the tunnel when that name is one it looks into. A TLS
// client that gives no server name, to an address of a host an HTTP rule
// names by its exact name, is refused. What stays beyond reach: a host
// that serves a ruled host under a name no rule gives (domain fronting,
// an alias on the same front end) is the host's to answer.

// inspectsPort reports whether an HTTP rule or a secret of r covers
// port, for any host.
func (r Rules) inspectsPort(port int) bool {
	covers := func(pattern string, defaults ...int) bool {
		_, p, err := parseHostPattern(pattern)
		return err == nil && portMatches(p, port, defaults)
	}
	for _, h := range r.Ports.AllowHTTP {
		if covers(h.Host, portHTTPS, portHTTP) {
			return true
		}
	}
	for _, s := range r.Secrets {
		for _, h := range s.Hosts {
			if covers(h, portHTTPS) {
				return true
			}
		}
	}
	return false
}

// lookInside decides a tunnel to ap on port, opened to the client c (br
// reads it), that its name did not make the proxy look into: the target
// to look into under the name the client speaks to inside, or none. The
// client's first bytes stay in br.
func (p *Proxy) lookInside(ctx context.Context, id, host string, port int, ap netip.AddrPort, c net.Conn, br *bufio.Reader) (target, bool, error) {
	r, ok := p.opts.Rules(id)
	if !ok || !r.inspectsPort(port) {
		return target{}, false, nil
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	name, isTLS, err := innerName(br)
	_ = c.SetReadDeadline(time.Time{})
	if errors.Is(err, errHelloEncrypted) && name != "" && name == canonicalHost(host) {
		// An ECH extension whose outer name is the one the tunnel was
		// opened to: Chromium's and others' GREASE (a random extension
		// sent to every server), or a real ECH whose front end is that
		// host, which then answers for the names behind it (the fronting
		// the proxy cannot see in any case). Judged by that name.
		err = nil
	}
	if errors.Is(err, errHelloTooLarge) || errors.Is(err, errHeadTooLarge) || errors.Is(err, errHelloEncrypted) || errors.Is(err, errHelloUnread) {
		rule := "the tunnel's first message (" + err.Error() + ") hides the name inside from the proxy, and that name may be one the sandbox's HTTP rules or secrets name"
		allow := "send a smaller TLS ClientHello or request head"
		switch {
		case errors.Is(err, errHelloEncrypted):
			allow = "connect without Encrypted Client Hello (ECH)"
		case errors.Is(err, errHelloUnread):
			allow = "begin the TLS connection with its ClientHello, in handshake records only"
		}
		return target{}, false, p.refuseConnect(id, ap.Addr().String(), port, rule, allow)
	}
	if err != nil {
		return target{}, false, err
	}
	if name == "" {
		// A client that names no host, to an address of a host an HTTP
		// rule names exactly, is refused: TLS without a server name, a
		// request without Host, or bytes the proxy does not read at all
		// (the host may still serve them as the ruled host's).
		if host := p.ruledHostAt(ctx, r, port, ap.Addr()); host != "" {
			rule := fmt.Sprintf("a connection that names no host the proxy can read (no TLS server name, no HTTP Host), to %s, an address of %s, which the sandbox's HTTP rules name", ap, host)
			if isTLS {
				rule = fmt.Sprintf("a TLS connection that names no server, to %s, an address of %s, which the sandbox's HTTP rules name", ap, host)
			}
			return target{}, false, p.refuseConnect(id, ap.Addr().String(), port, rule, "connect to "+host+" by its name")
		}
		return target{}, false, nil
	}
	if !isTLS {
		// A plain HTTP tunnel is served request by request, whatever its
		// first request names: each later request must name the same
		// host (serveLooked), so one naming a ruled host cannot follow
		// one that names another.
		if tg, look, err := p.lookInto(id, name, port, ap); err != nil || look {
			return tg, look, err
		}
		return target{id: id, host: name, port: port, ap: ap}, true, nil
	}
	return p.lookInto(id, name, port, ap)
}

// ruledHostAt is the first host an HTTP rule of r names exactly (no
// wildcard) on port whose addresses include addr, "" for none.
func (p *Proxy) ruledHostAt(ctx context.Context, r Rules, port int, addr netip.Addr) string {
	for _, h := range r.Ports.AllowHTTP {
		name, _, err := parseHostPattern(h.Host)
		if err != nil || strings.HasPrefix(name, "*.") || !matchHostPattern(h.Host, name, port, portHTTPS, portHTTP) {
			continue
		}
		if a, err := netip.ParseAddr(name); err == nil {
			if a.Unmap() == addr.Unmap() {
				return name
			}
			continue
		}
		addrs, err := p.resolve(ctx, name)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if a.Unmap() == addr.Unmap() {
				return name
			}
		}
	}
	return ""
}

// innerName reads, without taking it from br, the name the client of a
// tunnel speaks to: its TLS ClientHello's server name (isTLS), or the
// Host of its plain HTTP request; "" when it names none or speaks
// neither.
func innerName(br *bufio.Reader) (name string, isTLS bool, err error) {
	first, err := br.Peek(1)
	if err != nil {
		return "", false, err
	}
	if first[0] != recordHandshake {
		// Another TLS record before the ClientHello (a warning alert, which
		// a server may drop and then read the hello after it) would hide
		// the name from a reader that takes the stream for no TLS at all.
		if b, _ := br.Peek(2); len(b) == 2 && b[1] == 3 && b[0] >= recordChangeCipherSpec && b[0] <= recordApplicationData {
			return "", true, errHelloUnread
		}
		if !looksLikeHTTP(br) {
			return "", false, nil
		}
		if err := bufferHead(br); err != nil {
			return "", false, err
		}
		head, _ := br.Peek(br.Buffered())
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return "", false, nil
		}
		host := req.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		return canonicalHost(host), false, nil
	}
	// A ClientHello may take more than one record, each of them a
	// handshake record: their lengths are added up until the handshake
	// message (whose length its first 4 bytes give) is whole, and then
	// crypto/tls reads it, once (parsed again at each record, a hello
	// sent a byte a record would cost the proxy seconds).
	n, payload, msgLen := 0, 0, -1
	var msgHead []byte
	for {
		if n+recordHeader > br.Size() {
			return "", true, errHelloTooLarge
		}
		hdr, err := br.Peek(n + recordHeader)
		if err != nil {
			return "", true, err
		}
		if hdr[n] != recordHandshake {
			return "", true, errHelloUnread
		}
		size := int(hdr[n+3])<<8 | int(hdr[n+4])
		n += recordHeader + size
		if n > br.Size() {
			return "", true, errHelloTooLarge
		}
		records, err := br.Peek(n)
		if err != nil {
			return "", true, err
		}
		payload += size
		if len(msgHead) < 4 {
			frag := records[n-size:]
			msgHead = append(msgHead, frag[:min(len(frag), 4-len(msgHead))]...)
			if len(msgHead) == 4 {
				msgLen = int(msgHead[1])<<16 | int(msgHead[2])<<8 | int(msgHead[3])
			}
		}
		if msgLen < 0 || payload < 4+msgLen {
			continue
		}
		hello, ech, whole := clientHello(records)
		switch {
		case !whole:
			return "", true, errHelloUnread
		case ech:
			return canonicalHost(hello), true, errHelloEncrypted
		}
		return canonicalHost(hello), true, nil
	}
}

// TLS record types.
const (
	recordChangeCipherSpec = 0x14
	recordHandshake        = 0x16
	recordApplicationData  = 0x17
)

// errHelloUnread is a TLS stream that does not begin with a ClientHello
// crypto/tls reads, in handshake records alone: the name a server reads
// from it, after records it drops or from a hello it reads otherwise, may
// be one the sandbox's HTTP rules or secrets name.
var errHelloUnread = errors.New("a TLS stream that does not begin with a ClientHello the proxy can read")

// looksLikeHTTP reports whether br begins with an HTTP method (a token
// of up to maxMethod characters, in any case: a server may take a method
// the proxy does not know) and a space.
func looksLikeHTTP(br *bufio.Reader) bool {
	for n := 1; n <= maxMethod+1; n++ {
		b, err := br.Peek(n)
		if err != nil {
			return false
		}
		switch c := b[n-1]; {
		case c == ' ':
			return n > 1
		case c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0:
			return false
		}
	}
	return false
}

// maxMethod bounds the method of a request the proxy reads the Host of.
const maxMethod = 32

// errHelloTooLarge is a ClientHello larger than the proxy reads a name
// from: the tunnel is refused rather than taken on its CONNECT's word.
var errHelloTooLarge = fmt.Errorf("a TLS ClientHello larger than %d bytes", MaxHeadBytes)

// errHelloSeen stops crypto/tls once it has read the ClientHello.
var errHelloSeen = errors.New("the ClientHello was read")

// clientHello parses records, the start of a TLS stream, as crypto/tls
// does: the ClientHello's server name, whether it offers an encrypted
// ClientHello (whose outer name is not the one inside), and whether the
// hello was whole.
func clientHello(records []byte) (serverName string, ech, whole bool) {
	conn := &helloConn{r: bytes.NewReader(records)}
	err := tls.Server(conn, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		serverName = h.ServerName
		ech = slices.Contains(h.Extensions, extEncryptedClientHello)
		return nil, errHelloSeen
	}}).Handshake()
	return serverName, ech, errors.Is(err, errHelloSeen)
}

// extEncryptedClientHello is the TLS extension of an encrypted
// ClientHello (RFC 9849).
const extEncryptedClientHello = 0xfe0d

// errHelloEncrypted is a ClientHello that hides its server name: on a
// port the sandbox's HTTP rules or secrets cover, it is refused, since
// the name inside may be one of theirs.
var errHelloEncrypted = errors.New("an encrypted TLS ClientHello, whose server name the proxy cannot read")

// helloConn is a connection that reads r and writes nowhere.
type helloConn struct {
	net.Conn
	r io.Reader
}

func (c *helloConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *helloConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *helloConn) Close() error                     { return nil }
func (c *helloConn) SetDeadline(time.Time) error      { return nil }
func (c *helloConn) SetReadDeadline(time.Time) error  { return nil }
func (c *helloConn) SetWriteDeadline(time.Time) error { return nil }
func (c *helloConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *helloConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
