package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd"
)

// The proxy looks into the connections to the hosts of an HTTP rule or
// of a secret: it answers the CONNECT (or SOCKS) itself, terminates the
// sandbox's TLS with a certificate for that host from the engine's CA
// (Options.CA), reads each request, judges it (the HTTP rules, the
// secrets' placeholders), and sends it on to the host over TLS of its
// own, verifying the host's certificate with this machine's trust store
// or the CA the owner pinned for it (Options.UpstreamRoots), never
// without. A client that speaks plain HTTP through the tunnel is served
// the same way, without TLS. Every other host stays a tunnel the proxy
// does not look into.
//
// The standard library does it: crypto/tls on both sides, and the
// requests and answers read and written with net/http's ReadRequest,
// ReadResponse and Write, in one loop per connection, as the proxy serves
// plain HTTP (the head bounds of head.go hold for both). Measured against
// http.Server with httputil.ReverseProxy, the loop has no goroutine hop
// per request and writes the answer in large TLS writes (batch.go): the
// benchmark (TestBenchInterception in app) decides for it.

// target is a connection the proxy looks into.
type target struct {
	id   string
	host string // normalised
	port int
	ap   netip.AddrPort
	tls  bool
}

func (t target) hostPort() string { return hostPort(t.host, t.port) }

// lookInto returns the target of a tunnel to host:port (ap checked) if
// the proxy looks into it. A tunnel the rules say to look into when the
// proxy has no CA is refused: its HTTP rules would not hold.
func (p *Proxy) lookInto(id, host string, port int, ap netip.AddrPort) (target, bool, error) {
	r, ok := p.opts.Rules(id)
	if !ok {
		return target{}, false, nil
	}
	name := canonicalHost(host)
	if !r.looksInto(name, port) {
		return target{}, false, nil
	}
	if p.opts.CA == nil {
		return target{}, false, p.refuseConnect(id, name, port, "the sandbox's HTTP rules or secrets name this host, and the proxy has no CA to look into its connections with", "")
	}
	return target{id: id, host: name, port: port, ap: ap}, true, nil
}

// refuseConnect records the refusal of a connection to host:port by rule
// (allow says how to allow it) and returns it as the Denied its caller
// answers with.
func (p *Proxy) refuseConnect(id, host string, port int, rule, allow string) *Denied {
	p.refuse(id, Refusal{Kind: KindConnect, Host: host, Port: port, Rule: rule, Allow: allow})
	return &Denied{Host: host, Port: port, Rule: rule, Allow: allow}
}

// intercept serves the connection c of a tunnel to t, whose client has
// been told that the tunnel is open, until it is closed.
func (p *Proxy) intercept(c net.Conn, t target) {
	defer c.Close()
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	raw := withBuffer(c, br)
	var conn net.Conn = raw
	var w io.Writer = raw
	if first[0] == 0x16 { // a TLS handshake record: the client speaks TLS
		if p.opts.CA == nil {
			return
		}
		bc := &batchConn{Conn: raw}
		tc := tls.Server(bc, &tls.Config{
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return p.opts.CA.Leaf(t.host) },
			NextProtos:     []string{"http/1.1"},
			MinVersion:     tls.VersionTLS12,
		})
		defer tc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			p.log.Debug("A sandbox's TLS handshake with the proxy failed.", "sandbox", t.id, "host", t.host, "err", err)
			return
		}
		conn, w, t.tls = tc, heldWriter{tc, bc}, true
	}
	p.serveLooked(conn, w, t)
}

// serveLooked reads requests from c (answers go to w, which writes to c)
// and answers each: refused, or sent on to t over a connection of its
// own, kept for the next request.
func (p *Proxy) serveLooked(c net.Conn, w io.Writer, t target) {
	br := bufio.NewReaderSize(c, MaxHeadBytes)
	bw := bufio.NewWriterSize(w, answerBuffer)
	var up *upstream
	defer func() { p.upstreams.put(up) }()
	for {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
		if err := bufferHead(br); err != nil {
			if errors.Is(err, errHeadTooLarge) {
				p.recordDenial(t.id, t.host, "a request head "+err.Error())
				httpError(bw, http.StatusRequestHeaderFieldsTooLarge, "SenClaw's proxy refused a request head "+err.Error())
				bw.Flush()
			}
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			httpError(bw, http.StatusBadRequest, "SenClaw's proxy could not read the request: "+err.Error())
			bw.Flush()
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		keep, upgraded := p.answerLooked(req, c, br, answerWriter{bw, w}, &up, t)
		if upgraded || !keep {
			return
		}
	}
}

// answerBuffer is the buffer answers are written through: one TLS write
// (and one write to the sandbox, batch.go) of up to this much at a time.
const answerBuffer = 128 << 10

// answerLooked judges req and answers it. keep says whether the client's
// connection serves another request; upgraded that it became a relay
// (101 Switching Protocols) and is done.
func (p *Proxy) answerLooked(req *http.Request, c net.Conn, br *bufio.Reader, aw answerWriter, upp **upstream, t target) (keep, upgraded bool) {
	bw := aw.bw
	defer bw.Flush()
	fail := func(code int, msg string) (bool, bool) {
		httpError(bw, code, msg)
		return false, false
	}
	refuse := func(ref *Refusal) (bool, bool) {
		p.refuse(t.id, *ref)
		writeRefusal(bw, ref)
		return false, false
	}
	rules, ok := p.opts.Rules(t.id)
	if !ok {
		return fail(http.StatusForbidden, "SenClaw refused the request: the sandbox no longer exists")
	}
	// The request goes to the host the tunnel was checked for, whatever
	// its Host header says: a header naming another host is refused
	// rather than believed or silently replaced.
	if !sameHost(req.Host, t) {
		return fail(http.StatusBadRequest, fmt.Sprintf("SenClaw's proxy refused the request: its Host header %q is not %s, the host the connection was opened to", req.Host, t.hostPort()))
	}
	if req.URL.IsAbs() && !sameHost(req.URL.Host, t) {
		return fail(http.StatusBadRequest, fmt.Sprintf("SenClaw's proxy refused the request for %s on a connection opened to %s", req.URL.Host, t.hostPort()))
	}
	if ref := checkRequest(rules.Ports.AllowHTTP, t.host, t.port, req); ref != nil {
		return refuse(ref)
	}
	// The path as the sandbox sent it, for what the proxy reports: the
	// swap may put a value in req's.
	sent := req.URL.Path
	ref, values, err := p.secretsInHead(req, rules.Secrets, t.host, t.port, t.tls)
	if err == nil && ref == nil {
		// Every answer of a secret's host is masked, not only those to a
		// request that carried its placeholder: a host may keep what it
		// was sent (an upload's name, a header-less secret swapped into
		// the query) and give it back to a later request.
		values, err = p.hostValues(values, rules.Secrets, t.host, t.port, t.tls)
	}
	if err != nil {
		return fail(http.StatusBadGateway, err.Error())
	}
	if ref != nil {
		return refuse(ref)
	}
	if err := scanBody(req, bodyTokens(rules.Secrets, t.host, t.port, t.tls)); err != nil {
		var sb *secretInBody
		if errors.As(err, &sb) {
			return refuse(p.bodyRefusal(sb, req.Method, sent, t))
		}
		return fail(http.StatusBadRequest, "SenClaw's proxy could not read the request body: "+err.Error())
	}
	// A client that waits for 100 Continue gets it from the proxy, which
	// then reads the body; the host is not asked to wait.
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		req.Header.Del("Expect")
		io.WriteString(bw, "HTTP/1.1 100 Continue\r\n\r\n")
		bw.Flush()
	}
	if p.opts.OnRequest != nil {
		p.opts.OnRequest(t.id, t.host, t.port, req.Method, sent)
	}
	if len(values) > 0 {
		// The answer is masked (redactHeader): uncompressed, and so is a
		// WebSocket's stream after it. A server that reads Accept_Encoding
		// as Accept-Encoding (CGI's HTTP_ names) is not asked either.
		for _, name := range []string{"Accept-Encoding", "Sec-WebSocket-Extensions", "Te"} {
			delHeaderAnySpelling(req.Header, name)
		}
	}
	// HTTP/2 over the cleartext upgrade would carry requests the proxy
	// does not read: the upgrade is not passed on (the request is served
	// as HTTP/1.1).
	if headerHasToken(req.Header, "Upgrade", "h2c") {
		delHeaderAnySpelling(req.Header, "Upgrade")
		delHeaderAnySpelling(req.Header, "HTTP2-Settings")
	}
	upgrade := req.Header.Get("Upgrade") != "" && headerHasToken(req.Header, "Connection", "upgrade")
	dropHopHeaders(req.Header, upgrade)
	req.RequestURI = ""
	req.URL.Scheme, req.URL.Host = "http", t.hostPort()
	if t.tls {
		req.URL.Scheme = "https"
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{} // none, not Go's
	}
	up := *upp
	if up != nil && up.broken {
		up.conn.Close()
		up, *upp = nil, nil
	}
	if up == nil {
		if up, err = p.upstreams.get(p, t); err != nil {
			return fail(http.StatusBadGateway, err.Error())
		}
		*upp = up
	}
	if err = req.Write(up.bw); err == nil {
		err = up.bw.Flush()
	} else if sb := bodyRefused(req, err); sb != nil {
		up.broken = true
		return refuse(p.bodyRefusal(sb, req.Method, sent, t))
	}
	if err != nil {
		up.broken = true
		return fail(http.StatusBadGateway, fmt.Sprintf("SenClaw's proxy could not send the request to %s: %v", t.hostPort(), err))
	}
	resp, err := readAnswer(up.br, req)
	if err != nil {
		up.broken = true
		msg := "no valid answer from " + t.hostPort()
		switch {
		case errors.Is(err, errHeadTooLarge):
			msg = "the answer of " + t.hostPort() + " has a head " + err.Error()
		case errors.Is(err, errTooManyInterim):
			msg = t.hostPort() + " " + err.Error()
		}
		return fail(http.StatusBadGateway, msg)
	}
	defer resp.Body.Close()
	if len(values) > 0 {
		redactHeader(resp.Header, values)
		// A host that compressed its answer although it was not asked to
		// would hide the value from the mask: the answer is decoded
		// first, or refused when the proxy cannot decode it.
		if err := decodeForMask(resp); err != nil {
			up.broken = true
			return fail(http.StatusBadGateway, fmt.Sprintf("SenClaw's proxy refused the answer of %s: %v, and answers of a secret's host are masked, which needs them uncompressed", t.hostPort(), err))
		}
		resp.Body = newRedactReader(resp.Body, values, resp)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols && upgrade {
		// A WebSocket and the like: from here on the bytes are the
		// protocol's, relayed both ways as a tunnel's; what the host
		// sends is masked as an answer is, since it too may quote the
		// value the upgrade request carried.
		if err := resp.Write(bw); err != nil || bw.Flush() != nil {
			return false, true
		}
		*upp = nil
		from := withBuffer(up.conn, up.br)
		if len(values) > 0 {
			from = &bufferedConn{Conn: up.conn, r: newRedactReader(io.NopCloser(up.br), values, nil)}
		}
		netfwd.Relay(withBuffer(c, br), from)
		return false, true
	}
	// A short answer is passed on as it is read; a long one is read
	// ahead by a goroutine of its own (batch.go), which costs more than
	// a short answer takes. So is one with trailers, which the reader
	// fills at the end while the head that announces them is written.
	// An answer to HEAD has none to read, whatever its Content-Length.
	if req.Method == http.MethodHead || resp.ContentLength >= 0 && resp.ContentLength <= aheadSize || len(resp.Trailer) > 0 {
		resp.Body = &answerBody{ReadCloser: resp.Body, bw: bw, up: up}
	} else {
		resp.Body = newAheadBody(resp.Body, bw, up)
	}
	dropHopHeaders(resp.Header, false)
	// Written through aw, not bw: bw's ReadFrom would read the body into
	// bw's own buffer, which answerBody flushes.
	if err := resp.Write(aw); err != nil {
		up.broken = true
		up.conn.Close()
		return false, false
	}
	if resp.Close {
		up.broken = true
	}
	return !resp.Close && !req.Close, false
}

// maxInterim bounds the interim answers a host may send before its
// final one.
const maxInterim = 8

var errTooManyInterim = fmt.Errorf("sent more than %d interim (1xx) answers before its final one", maxInterim)

// readAnswer reads the answer to req from br (which bufferHead needs to
// be large enough for), reading past the interim answers before it (103
// Early Hints, a 100 Continue to an Expect the proxy passed on): taken
// for the answer, one would leave the final answer to be read as the
// answer to the client's next request, which the values of this one are
// not masked in. A 101 is final.
func readAnswer(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for i := 0; ; i++ {
		if err := bufferHead(br); err != nil {
			return nil, err
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		resp.Body.Close()
		if i == maxInterim {
			return nil, errTooManyInterim
		}
	}
}

// hopHeaders are the headers of one connection, never passed on.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// dropHopHeaders removes the hop-by-hop headers and those Connection
// names; an upgrade keeps Connection: Upgrade and Upgrade.
func dropHopHeaders(h http.Header, upgrade bool) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" && !(upgrade && strings.EqualFold(name, "upgrade")) {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		if upgrade && (name == "Connection" || name == "Upgrade") {
			continue
		}
		h.Del(name)
	}
	if upgrade {
		h.Set("Connection", "Upgrade")
	}
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// sameHost reports whether a Host header names t's host (and port, the
// scheme's default when it gives none).
func sameHost(h string, t target) bool {
	def := portHTTP
	if t.tls {
		def = portHTTPS
	}
	host, port, err := splitHostPort(h, def)
	if err != nil {
		return false
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		host = a.Unmap().String()
	} else if host, err = normalizeName(host); err != nil {
		return false
	}
	return host == t.host && port == t.port
}

// writeRefusal answers a refused request: 403, with the rule and how to
// allow it in the body and in X-Senclaw-Refused.
func writeRefusal(w io.Writer, ref *Refusal) {
	line := ref.Rule
	if ref.Allow != "" {
		line += "; to allow it: " + ref.Allow
	}
	body := fmt.Sprintf("SenClaw refused %s %s%s: %s\n", ref.Method, hostPort(ref.Host, ref.Port), ref.Path, line)
	fmt.Fprintf(w, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Senclaw-Proxy: refused\r\nX-Senclaw-Refused: %s\r\n\r\n%s",
		len(body), headerSafe(line), body)
}

// headerSafe keeps a header value to printable ASCII.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
}

// bodyRefused returns the placeholder writing r failed at, when that is
// why: net/http's error for a body that failed to read does not unwrap
// to the body's own, so the scanning body is asked.
func bodyRefused(r *http.Request, err error) *secretInBody {
	var sb *secretInBody
	if errors.As(err, &sb) {
		return sb
	}
	if s, ok := r.Body.(*scanReader); ok && errors.As(s.err, &sb) {
		return sb
	}
	return nil
}

// bodyRefusal is the refusal of a request for method and path (as the
// sandbox sent it) whose body carried a placeholder it may not.
func (p *Proxy) bodyRefusal(sb *secretInBody, method, path string, t target) *Refusal {
	ref := &Refusal{Kind: KindSecret, Host: t.host, Port: t.port, Method: method, Path: clipPath(path),
		Rule:  fmt.Sprintf("the request body carried the placeholder of secret %q to %s, which is not one of its hosts (%s): an exfiltration attempt", sb.token.name, t.hostPort(), strings.Join(sb.token.hosts, ", ")),
		Allow: "send it only to " + strings.Join(sb.token.hosts, ", ") + "; the owner chooses a secret's hosts (senclaw secrets)"}
	if !t.tls && matchAnyHost(sb.token.hosts, t.host, t.port) {
		ref.Rule = fmt.Sprintf("the request body carried the placeholder of secret %q over plain HTTP; secrets go only over HTTPS", sb.token.name)
		ref.Allow = "use https://" + t.hostPort()
	}
	return ref
}

func matchAnyHost(patterns []string, host string, port int) bool {
	for _, h := range patterns {
		if matchHostPattern(h, host, port, portHTTPS) {
			return true
		}
	}
	return false
}
