package netproxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"slices"
	"strings"
)

// A run given a secret holds a placeholder, "<senclaw-secret:NAME:TOKEN>",
// never the value. The proxy swaps the placeholder for the value in the
// requests it looks into that go to one of the secret's hosts over TLS,
// in the secret's header (or anywhere in the request head, when the
// secret names no header); an HTTP Basic credential is decoded, swapped
// and encoded again, since that is how git and others send a token. A
// request that carries a placeholder anywhere else (another host, plain
// HTTP, a header not the secret's, or, in a request body the proxy
// reads, to any host not the secret's) is refused and counted: the
// sandbox tried to send its secret where it does not go. The proxy finds
// a placeholder by its token (128 random bits), in any case and encoded
// or not, so wrapping it does not hide it; what it cannot see (a TLS
// connection it does not look into) carries a placeholder worth nothing
// there.

// errSecretValue is a secret whose value the engine could not read.
type errSecretValue struct {
	name string
	err  error
}

func (e *errSecretValue) Error() string {
	return fmt.Sprintf("the proxy could not read secret %q to put it into the request: %v", e.name, e.err)
}

// secretsInHead finds the placeholders in the head of r, a request to
// host:port (tlsOn: over TLS, looked into), swaps those that go there,
// and returns the refusal of one that does not; a value that cannot be
// read is an *errSecretValue. The values put in are returned, for the
// answer's redaction.
func (p *Proxy) secretsInHead(r *http.Request, uses []SecretUse, host string, port int, tlsOn bool) (*Refusal, []string, error) {
	var values []string
	// A refusal quotes the path as the sandbox sent it: once one secret
	// is swapped, the path may hold its value.
	path := clipPath(r.URL.Path)
	for _, u := range uses {
		if !headHas(r, u.Token) {
			continue
		}
		ref := &Refusal{Kind: KindSecret, Host: host, Port: port, Method: r.Method, Path: path}
		if !u.sendsTo(host, port) {
			ref.Rule = fmt.Sprintf("the request carried the placeholder of secret %q to %s, which is not one of its hosts (%s): an exfiltration attempt", u.Name, hostPort(host, port), strings.Join(u.Hosts, ", "))
			ref.Allow = "send it only to " + strings.Join(u.Hosts, ", ") + "; the owner chooses a secret's hosts (senclaw secrets)"
			return ref, nil, nil
		}
		if !tlsOn {
			ref.Rule = fmt.Sprintf("the request carried the placeholder of secret %q over plain HTTP; secrets go only over HTTPS", u.Name)
			ref.Allow = "use https://" + hostPort(host, port)
			return ref, nil, nil
		}
		value, err := p.opts.SecretValue(u.Name)
		if err != nil {
			return nil, nil, &errSecretValue{u.Name, err}
		}
		swap(r, u, string(value))
		values = append(values, string(value))
		if headHas(r, u.Token) {
			where := "in the request head"
			if u.Header != "" {
				where = "in its header " + u.Header
			}
			ref.Rule = fmt.Sprintf("the request carried the placeholder of secret %q where the proxy does not put the value; it goes %s", u.Name, where)
			ref.Allow = "send the placeholder " + where + ", as it is (or in an HTTP Basic credential)"
			return ref, nil, nil
		}
	}
	return nil, values, nil
}

// hostValues adds to values (the secrets swapped into a request) the
// value of every other secret of uses whose hosts include host:port,
// over TLS (no value goes over plain HTTP): what the proxy masks in that
// host's answers.
func (p *Proxy) hostValues(values []string, uses []SecretUse, host string, port int, tlsOn bool) ([]string, error) {
	if !tlsOn {
		return values, nil
	}
	for _, u := range uses {
		if !u.sendsTo(host, port) {
			continue
		}
		value, err := p.opts.SecretValue(u.Name)
		if err != nil {
			return nil, &errSecretValue{u.Name, err}
		}
		if v := string(value); v != "" && !slices.Contains(values, v) {
			values = append(values, v)
		}
	}
	return values, nil
}

// delHeaderAnySpelling removes name from h in every spelling a server
// may take for it: any case, and with underscores for dashes.
func delHeaderAnySpelling(h http.Header, name string) {
	want := strings.ToLower(name)
	for k := range h {
		if strings.ReplaceAll(strings.ToLower(k), "_", "-") == want {
			delete(h, k)
		}
	}
}

// decodeForMask makes resp's body the decoded one when the host sent it
// compressed (gzip or deflate), dropping Content-Encoding and the length
// that no longer holds; another encoding is an error.
func decodeForMask(resp *http.Response) error {
	// Every Content-Encoding the host sent, in every header line: a
	// client decodes them all (urllib3 and curl do), not only the first.
	var encs []string
	for _, v := range resp.Header.Values("Content-Encoding") {
		for _, e := range strings.Split(v, ",") {
			if e = strings.ToLower(strings.TrimSpace(e)); e != "" && e != "identity" {
				encs = append(encs, e)
			}
		}
	}
	if len(encs) == 0 {
		return nil
	}
	enc := strings.Join(encs, ", ")
	if len(encs) > 1 {
		return fmt.Errorf("it is encoded with %q, more than one encoding, which the proxy does not decode", enc)
	}
	var r io.ReadCloser
	switch enc {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return fmt.Errorf("its gzip body does not decode (%v)", err)
		}
		r = zr
	case "deflate":
		zr, err := zlib.NewReader(resp.Body)
		if err != nil {
			return fmt.Errorf("its deflate body does not decode (%v)", err)
		}
		r = zr
	default:
		return fmt.Errorf("it is encoded with %q, which the proxy does not decode", enc)
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{r, resp.Body}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength, resp.TransferEncoding = -1, []string{"chunked"}
	return nil
}

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// headHas reports whether token is anywhere in r's head: the request
// target (raw and decoded) and every header name and value (Basic
// credentials decoded), in any case.
func headHas(r *http.Request, token string) bool {
	has := func(s string) bool {
		if strings.Contains(strings.ToLower(s), token) {
			return true
		}
		if d, err := neturl.QueryUnescape(s); err == nil && d != s && strings.Contains(strings.ToLower(d), token) {
			return true
		}
		return false
	}
	if has(r.URL.EscapedPath()) || has(r.URL.RawQuery) || has(r.URL.Path) || has(r.RequestURI) {
		return true
	}
	for k, vs := range r.Header {
		if has(k) {
			return true
		}
		for _, v := range vs {
			if has(v) {
				return true
			}
			if d, ok := basicCredential(v); ok && has(d) {
				return true
			}
		}
	}
	return false
}

// basicCredential decodes an HTTP Basic credential ("Basic BASE64").
func basicCredential(v string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// swap puts value where u's placeholder is, where u says it goes: its
// header, or (no header) every header and the request target.
func swap(r *http.Request, u SecretUse, value string) {
	ph := u.Placeholder()
	inValue := func(v string) string {
		if strings.Contains(v, ph) {
			if u.Format != "" {
				return strings.Replace(u.Format, "{}", value, 1)
			}
			return strings.ReplaceAll(v, ph, value)
		}
		if d, ok := basicCredential(v); ok && strings.Contains(d, ph) {
			return "Basic " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(d, ph, value)))
		}
		return v
	}
	if u.Header != "" {
		vs := r.Header.Values(u.Header)
		for i, v := range vs {
			vs[i] = inValue(v)
		}
		return
	}
	for _, vs := range r.Header {
		for i, v := range vs {
			vs[i] = inValue(v)
		}
	}
	if strings.Contains(r.URL.Path, ph) || strings.Contains(r.URL.RawPath, ph) {
		r.URL.Path = strings.ReplaceAll(r.URL.Path, ph, value)
		r.URL.RawPath = ""
	}
	for _, form := range []string{ph, neturl.QueryEscape(ph)} {
		r.URL.RawQuery = strings.ReplaceAll(r.URL.RawQuery, form, neturl.QueryEscape(value))
	}
	r.RequestURI = ""
}

// bodyTokens are the tokens a request body to host:port must not hold:
// those of the secrets that do not go there.
func bodyTokens(uses []SecretUse, host string, port int, tlsOn bool) []bodyToken {
	var out []bodyToken
	for _, u := range uses {
		if !tlsOn || !u.sendsTo(host, port) {
			out = append(out, bodyToken{name: u.Name, hosts: u.Hosts, token: []byte(u.Token)})
		}
	}
	return out
}

type bodyToken struct {
	name  string
	hosts []string
	token []byte
}

// prescanBytes is how much of a request body the proxy reads and checks
// before it sends anything on: a body that size or smaller carrying a
// placeholder is refused before the host hears of the request. A longer
// one is checked as it streams, and cut off before the placeholder.
const prescanBytes = 256 << 10

// scanBody checks r's body for tokens: up to prescanBytes at once (a
// *secretInBody when one is there), the rest as it is read.
func scanBody(r *http.Request, tokens []bodyToken) error {
	if len(tokens) == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, prescanBytes+1))
	if err != nil {
		return err
	}
	lower := bytes.ToLower(head)
	for _, t := range tokens {
		if bytes.Contains(lower, t.token) {
			r.Body.Close()
			return &secretInBody{t}
		}
	}
	if len(head) <= prescanBytes {
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(head))
		return nil
	}
	r.Body = newScanReader(struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}, tokens)
	return nil
}

// secretInBody is a request body that held a placeholder it may not.
type secretInBody struct{ token bodyToken }

func (e *secretInBody) Error() string {
	return fmt.Sprintf("the request body carried the placeholder of secret %q to a host not its own", e.token.name)
}

// scanReader passes a body through, and fails, before passing it on, on
// the first of tokens it finds (in any case): a token split across reads
// is found too, since the last len(token)-1 bytes are held back until the
// next read.
type scanReader struct {
	r      io.Reader
	tokens []bodyToken
	keep   int
	buf    []byte // read and not yet passed on
	out    int    // buf[:out] is checked and may be passed on
	err    error
}

func newScanReader(r io.Reader, tokens []bodyToken) *scanReader {
	keep := 0
	for _, t := range tokens {
		keep = max(keep, len(t.token)-1)
	}
	return &scanReader{r: r, tokens: tokens, keep: keep}
}

func (s *scanReader) Read(p []byte) (int, error) {
	for s.out == 0 {
		if s.err != nil {
			if len(s.buf) > 0 && !errors.As(s.err, new(*secretInBody)) {
				s.out = len(s.buf) // the end: the held back bytes go too
				break
			}
			return 0, s.err
		}
		if cap(s.buf)-len(s.buf) < 16<<10 {
			grown := make([]byte, len(s.buf), len(s.buf)+32<<10)
			copy(grown, s.buf)
			s.buf = grown
		}
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil {
			s.err = err
		}
		lower := bytes.ToLower(s.buf)
		for _, t := range s.tokens {
			if bytes.Contains(lower, t.token) {
				s.err = &secretInBody{t}
				s.buf = nil
				return 0, s.err
			}
		}
		if s.err == nil && len(s.buf) > s.keep {
			s.out = len(s.buf) - s.keep
		}
	}
	n := copy(p, s.buf[:s.out])
	s.buf = s.buf[n:]
	s.out -= n
	if len(s.buf) == 0 {
		s.buf = nil
	}
	return n, nil
}

func (s *scanReader) Close() error {
	if c, ok := s.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// An answer from a secret's host may quote the request back (an echo, an
// error page that shows the headers): the value would reach the sandbox
// that way. So the answer to a request that carried a value has every
// occurrence of it, in its head and its body, masked with as many '*'
// (the body keeps its length), and the request asks for no compression
// (which would hide the value from the mask); its trailers are masked
// too. A value the host sends
// encoded (base64, inside a Basic credential) is not found.

// redactHeader masks the values in h.
func redactHeader(h http.Header, values []string) {
	for k, vs := range h {
		for i, v := range vs {
			for _, val := range values {
				v = strings.ReplaceAll(v, val, strings.Repeat("*", len(val)))
			}
			h[k][i] = v
		}
	}
}

// redactReader masks the values in a body as it passes: the bytes at
// the end of what has come that may begin a value (at most the longest
// value less one) are held back until more come. The rest goes on at
// once: a stream of events is not held back a part.
type redactReader struct {
	r io.ReadCloser
	// resp, when set, is the answer whose trailers (read with the end of
	// its body) are masked when the body ends, before they are written.
	resp   *http.Response
	strs   []string
	values [][]byte
	keep   int
	buf    []byte
	out    int
	err    error
}

func newRedactReader(r io.ReadCloser, values []string, resp *http.Response) *redactReader {
	rr := &redactReader{r: r, resp: resp, strs: values}
	for _, v := range values {
		rr.values = append(rr.values, []byte(v))
		rr.keep = max(rr.keep, len(v)-1)
	}
	return rr
}

func (r *redactReader) Read(p []byte) (int, error) {
	for r.out == 0 {
		if r.err != nil {
			if len(r.buf) == 0 {
				return 0, r.err
			}
			r.out = len(r.buf)
			break
		}
		if cap(r.buf)-len(r.buf) < 16<<10 {
			grown := make([]byte, len(r.buf), len(r.buf)+32<<10)
			copy(grown, r.buf)
			r.buf = grown
		}
		n, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		r.err = err
		if err != nil && r.resp != nil {
			redactHeader(r.resp.Trailer, r.strs)
		}
		for _, v := range r.values {
			for i := bytes.Index(r.buf, v); i >= 0; i = bytes.Index(r.buf, v) {
				copy(r.buf[i:], bytes.Repeat([]byte("*"), len(v)))
			}
		}
		if r.err == nil {
			r.out = len(r.buf) - mayBegin(r.buf, r.values, r.keep)
		}
	}
	n := copy(p, r.buf[:r.out])
	r.buf = r.buf[n:]
	r.out -= n
	if len(r.buf) == 0 {
		r.buf = nil
	}
	return n, nil
}

func (r *redactReader) Close() error { return r.r.Close() }

// mayBegin is the length of the longest end of buf, at most keep bytes,
// that begins one of values.
func mayBegin(buf []byte, values [][]byte, keep int) int {
	for k := min(keep, len(buf)); k > 0; k-- {
		for _, v := range values {
			if bytes.HasPrefix(v, buf[len(buf)-k:]) {
				return k
			}
		}
	}
	return 0
}
