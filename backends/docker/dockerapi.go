package docker

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/moby/moby/client"
)

// The daemon's client is the official one (github.com/moby/moby/client)
// over a transport of ours, because what the daemon answers is input: the
// official client decodes a successful answer whole, however large, and
// prints a refusal's message as the daemon wrote it. Ours reads every
// answer under a cap, keeps refusals short and printable, dials with the
// caller's context (TLS handshake included), and hijacks attach and exec
// start itself (hijack.go).
//
// Linking the client costs every senclaw process about 0.7 ms of package
// init (distribution/reference and go-digest compile regular expressions
// at start), CLI calls included: measured, and taken for the maintained
// client.

// Caps on what is read of the daemon's answers.
const (
	maxErrorBody   = 16 << 10
	maxSmallBody   = 1 << 20
	maxInspectBody = 8 << 20
	maxListBody    = 32 << 20
)

// apiClient is the official client with what the backend adds to it: the
// hijacked streams, and the transport to close.
type apiClient struct {
	*client.Client
	dial      *dialer
	transport *http.Transport
}

// dialer reaches the daemon of one host.
type dialer struct {
	host   string // as given, for messages
	proto  string // "unix", "tcp" or "npipe"
	addr   string // the socket path, host:port or pipe name
	scheme string // "http" or "https"
	tls    *tls.Config
}

// newAPIClient makes a client of ep's daemon. It does not contact it.
func newAPIClient(ep endpoint) (*apiClient, error) {
	d, err := newDialer(ep)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		DialContext:            func(ctx context.Context, _, _ string) (net.Conn, error) { return d.dialRaw(ctx) },
		TLSClientConfig:        d.tls,
		DisableCompression:     true,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxSmallBody,
	}
	hc := &http.Client{Transport: cappedTransport{tr}, CheckRedirect: client.CheckRedirect}
	opts := []client.Opt{
		client.WithHost(ep.Host),
		client.WithHTTPClient(hc),
		client.WithScheme(d.scheme),
		client.WithUserAgent("senclaw"),
	}
	if v := strings.TrimSpace(ep.APIVersion); v != "" {
		opts = append(opts, client.WithAPIVersion(v))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, err
	}
	return &apiClient{Client: cli, dial: d, transport: tr}, nil
}

// Close drops the idle connections.
func (c *apiClient) Close() error {
	c.transport.CloseIdleConnections()
	return c.Client.Close()
}

func newDialer(ep endpoint) (*dialer, error) {
	proto, addr, ok := strings.Cut(ep.Host, "://")
	if !ok || addr == "" {
		return nil, fmt.Errorf("the docker host %q is not of the form unix:///path or tcp://host:port", ep.Host)
	}
	d := &dialer{host: ep.Host, proto: proto, addr: addr, scheme: "http"}
	switch proto {
	case "unix", "npipe":
	case "tcp":
		u, err := url.Parse(ep.Host)
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("the docker host %q is not of the form tcp://host:port", ep.Host)
		}
		d.addr = u.Host
		if ep.CACert != "" {
			t, err := tlsConfig(ep, u.Hostname())
			if err != nil {
				return nil, err
			}
			d.tls, d.scheme = t, "https"
		}
	default:
		return nil, fmt.Errorf("the docker host %q uses %q, which senclaw does not speak (unix://, tcp://, npipe://)", ep.Host, proto)
	}
	return d, nil
}

// dialRaw opens a connection to the daemon, without TLS (the transport's
// or hijack's to add).
func (d *dialer) dialRaw(ctx context.Context) (net.Conn, error) {
	switch d.proto {
	case "unix":
		var nd net.Dialer
		return nd.DialContext(ctx, "unix", d.addr)
	case "npipe":
		return dialPipe(ctx, d.addr)
	}
	nd := net.Dialer{KeepAlive: 30 * time.Second}
	return nd.DialContext(ctx, "tcp", d.addr)
}

// urlHost is the Host of requests: the daemon's address over TCP, a fixed
// name over a socket or pipe (as the official client sends).
func (d *dialer) urlHost() string {
	if d.proto == "tcp" {
		return d.addr
	}
	return client.DummyHost
}

// tlsConfig verifies the daemon against the CA of ep, and presents ep's
// client certificate when it has one.
func tlsConfig(ep endpoint, serverName string) (*tls.Config, error) {
	ca, err := os.ReadFile(ep.CACert)
	if err != nil {
		return nil, fmt.Errorf("reading the docker CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("the docker CA certificate %s holds no PEM certificate", ep.CACert)
	}
	// Each attach and exec start is a connection of its own: resuming
	// the session spares each run most of a handshake.
	t := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, ServerName: serverName, ClientSessionCache: tls.NewLRUClientSessionCache(32)}
	if ep.Cert != "" || ep.Key != "" {
		pair, err := tls.LoadX509KeyPair(ep.Cert, ep.Key)
		if err != nil {
			return nil, fmt.Errorf("loading the docker client certificate %s: %w", ep.Cert, err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil
}

// cappedTransport reads every answer under a cap of its kind, and gives
// refusals a short, printable message.
type cappedTransport struct{ base *http.Transport }

func (t cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		cleanRefusal(resp)
		return resp, nil
	}
	if limit := answerCap(req.URL.Path); limit >= 0 {
		resp.Body = &cappedBody{rc: resp.Body, left: limit, limit: limit, what: req.Method + " " + req.URL.Path}
	}
	return resp, nil
}

// answerCap is the most read of an answer to path: lists, process tables
// and an import's progress may be long; a container's or image's inspect
// less; the rest (an exec's inspect, stats, ids) is small. A file tree
// copied out (archive, export) is a stream, not decoded: its reader
// bounds what it keeps (-1, no cap here).
func answerCap(path string) int64 {
	switch {
	case strings.HasSuffix(path, "/archive"), strings.HasSuffix(path, "/export"):
		return -1
	case strings.HasSuffix(path, "/containers/json"), strings.HasSuffix(path, "/top"), strings.HasSuffix(path, "/images/create"):
		return maxListBody
	case strings.HasSuffix(path, "/json") && (strings.Contains(path, "/containers/") || strings.Contains(path, "/images/")):
		return maxInspectBody
	}
	return maxSmallBody
}

// cappedBody fails a read past limit bytes.
type cappedBody struct {
	rc          io.ReadCloser
	left, limit int64
	what        string
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.tooLarge()
	}
	// One byte past the cap tells a larger answer from one of exactly
	// the cap.
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n - 1, c.tooLarge()
	}
	return n, err
}

func (c *cappedBody) tooLarge() error {
	return fmt.Errorf("the daemon's answer to %s is larger than %d bytes; refused", c.what, c.limit)
}

func (c *cappedBody) Close() error { return c.rc.Close() }

// cleanRefusal replaces the body of a refusal by its message (the JSON
// {"message": ...}, or the text), bounded and printable.
func cleanRefusal(resp *http.Response) {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	msg := refusalMessage(data)
	var body []byte
	if msg != "" {
		body, _ = json.Marshal(map[string]string{"message": msg})
		resp.Header.Set("Content-Type", "application/json")
	}
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(bytes.NewReader(body))
}

// refusalMessage is the message of a refusal's body, cleaned.
func refusalMessage(data []byte) string {
	var body struct {
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &body) == nil && body.Message != "" {
		msg = body.Message
	}
	return cleanMessage(msg)
}

// maxMessage bounds a daemon's message (in runes).
const maxMessage = 1024

// cleanMessage keeps a daemon's message printable and short.
func cleanMessage(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var sb strings.Builder
	n := 0
	for _, r := range s {
		if n == maxMessage {
			sb.WriteString("…")
			break
		}
		if unicode.IsControl(r) {
			r = ' '
		}
		sb.WriteRune(r)
		n++
	}
	return strings.TrimSpace(sb.String())
}
