// Package engineapi is a small client of the Docker Engine API: the calls
// the Docker backend makes, over a Unix socket, TCP (with TLS when given
// certificates) or, on Windows, a named pipe. It negotiates the API
// version with the daemon (its /_ping answer) unless one is pinned, maps
// the daemon's error answers to *Error (IsNotFound, IsConflict), and gives
// attach and exec start their hijacked connection with a demuxer for the
// multiplexed stdout/stderr stream.
//
// What the daemon answers is input: every body is read under a cap.
package engineapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxAPIVersion is the newest API version this client asks for; a daemon
// that speaks an older one is spoken to in its own.
const MaxAPIVersion = "1.51"

// fallbackAPIVersion is assumed of a daemon whose ping names no version.
const fallbackAPIVersion = "1.24"

// Caps on what is read of the daemon's answers.
const (
	maxErrorBody   = 16 << 10
	maxSmallBody   = 1 << 20
	maxInspectBody = 8 << 20
	maxListBody    = 32 << 20
)

// Config says where the daemon is.
type Config struct {
	// Host is unix:///path, tcp://host:port or (on Windows)
	// npipe:////./pipe/name.
	Host string
	// APIVersion pins the API version ("1.41"); empty negotiates it.
	APIVersion string
	// CACert, Cert and Key are PEM files for TLS over tcp://: with CACert
	// set, the daemon must present a certificate it signed, and Cert and
	// Key (when set) are this client's.
	CACert, Cert, Key string
}

// Client talks to one daemon. It is safe for concurrent use.
type Client struct {
	host    string
	proto   string // "unix", "tcp" or "npipe"
	addr    string // the socket path, host:port or pipe name
	scheme  string // "http" or "https"
	tls     *tls.Config
	http    *http.Client
	dialer  func(ctx context.Context) (net.Conn, error)
	version string

	mu         sync.Mutex
	negotiated bool // or pinned
}

// New makes a client for cfg. It does not contact the daemon.
func New(cfg Config) (*Client, error) {
	proto, addr, ok := strings.Cut(cfg.Host, "://")
	if !ok || addr == "" {
		return nil, fmt.Errorf("the docker host %q is not of the form unix:///path or tcp://host:port", cfg.Host)
	}
	c := &Client{host: cfg.Host, proto: proto, addr: addr, scheme: "http", version: MaxAPIVersion}
	switch proto {
	case "unix", "npipe":
	case "tcp":
		u, err := url.Parse(cfg.Host)
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("the docker host %q is not of the form tcp://host:port", cfg.Host)
		}
		c.addr = u.Host
		if cfg.CACert != "" {
			t, err := tlsConfig(cfg, u.Hostname())
			if err != nil {
				return nil, err
			}
			c.tls, c.scheme = t, "https"
		}
	default:
		return nil, fmt.Errorf("the docker host %q uses %q, which this client does not speak (unix://, tcp://, npipe://)", cfg.Host, proto)
	}
	if v := strings.TrimPrefix(cfg.APIVersion, "v"); v != "" {
		if !validVersion(v) {
			return nil, fmt.Errorf("the docker API version %q is not a version such as 1.41", cfg.APIVersion)
		}
		c.version, c.negotiated = v, true
	}
	c.dialer = func(ctx context.Context) (net.Conn, error) { return c.dial(ctx) }
	tr := &http.Transport{
		DialContext:           func(ctx context.Context, _, _ string) (net.Conn, error) { return c.dialer(ctx) },
		TLSClientConfig:       c.tls,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	c.http = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return c, nil
}

// dial opens a connection to the daemon (TLS is the caller's: the
// transport's, or hijack's).
func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	switch c.proto {
	case "unix":
		var d net.Dialer
		return d.DialContext(ctx, "unix", c.addr)
	case "npipe":
		return dialPipe(ctx, c.addr)
	}
	d := net.Dialer{KeepAlive: 30 * time.Second}
	return d.DialContext(ctx, "tcp", c.addr)
}

func tlsConfig(cfg Config, serverName string) (*tls.Config, error) {
	ca, err := os.ReadFile(cfg.CACert)
	if err != nil {
		return nil, fmt.Errorf("reading the docker CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("the docker CA certificate %s holds no PEM certificate", cfg.CACert)
	}
	t := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, ServerName: serverName}
	if cfg.Cert != "" || cfg.Key != "" {
		pair, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("loading the docker client certificate %s: %w", cfg.Cert, err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil
}

// Close drops the idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

// ClientVersion is the API version the client speaks: the negotiated one
// after the first call, MaxAPIVersion before.
func (c *Client) ClientVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// negotiate settles the API version with a ping, once; a failed ping is
// tried again at the next call.
func (c *Client) negotiate(ctx context.Context) error {
	c.mu.Lock()
	done := c.negotiated
	c.mu.Unlock()
	if done {
		return nil
	}
	_, err := c.Ping(ctx)
	return err
}

// settle takes the daemon's API version from a ping, when not yet
// negotiated: the older of it and MaxAPIVersion.
func (c *Client) settle(daemon string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.negotiated {
		return
	}
	if daemon == "" || !validVersion(daemon) {
		daemon = fallbackAPIVersion
	}
	if VersionLess(daemon, c.version) {
		c.version = daemon
	}
	c.negotiated = true
}

// validVersion reports whether v is MAJOR.MINOR with digits only.
func validVersion(v string) bool {
	major, minor, ok := strings.Cut(v, ".")
	return ok && digits(major) && digits(minor)
}

func digits(s string) bool {
	if s == "" || len(s) > 6 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// VersionLess reports whether API version a is older than b ("1.9" is
// older than "1.41").
func VersionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// request builds a request for path (without the version prefix when
// versioned is false).
func (c *Client) request(ctx context.Context, method, path string, query url.Values, body io.Reader, versioned bool) (*http.Request, error) {
	if versioned {
		path = "/v" + c.ClientVersion() + path
	}
	u := url.URL{Scheme: c.scheme, Host: c.urlHost(), Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "senclaw-engineapi")
	return req, nil
}

// urlHost is the Host of requests: the daemon's address over TCP, a fixed
// name over a socket or pipe.
func (c *Client) urlHost() string {
	if c.proto == "tcp" {
		return c.addr
	}
	return "api.moby.localhost"
}

// do sends a request to the versioned API and returns the answer of a
// successful status; other statuses become *Error.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in any) (*http.Response, error) {
	if err := c.negotiate(ctx); err != nil {
		return nil, err
	}
	var body io.Reader
	if r, ok := in.(io.Reader); ok {
		body = r
	} else if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(data)
	}
	req, err := c.request(ctx, method, path, query, body, true)
	if err != nil {
		return nil, err
	}
	switch in.(type) {
	case nil:
	case io.Reader:
		req.Header.Set("Content-Type", "application/x-tar")
	default:
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req)
}

// send runs req and turns a failed status into *Error. A redirect is no
// success: the daemon answers 301, and does nothing, for a path it cleans
// (an empty or dotted name: /containers//stop); 304 is (a container
// already started or stopped).
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.connErr(err)
	}
	switch {
	case resp.StatusCode >= 400:
		defer resp.Body.Close()
		return nil, errorOf(resp)
	case resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotModified:
		drain(resp)
		return nil, fmt.Errorf("the daemon did not do %s %s: it answered %s (to %q)", req.Method, req.URL.Path, resp.Status, resp.Header.Get("Location"))
	}
	return resp, nil
}

// connErr marks err as the daemon not answering when it is one: the dial
// failed, or an answer that is no HTTP (a TLS daemon spoken to without
// TLS). Context errors stay as they are.
func (c *Client) connErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var op *net.OpError
	var ne net.Error
	switch {
	case errors.As(err, &op) && op.Op == "dial",
		errors.As(err, &ne) && ne.Timeout(),
		strings.Contains(err.Error(), "malformed HTTP response"):
		return &ConnectError{Host: c.host, Err: err}
	}
	return err
}

// ConnectError says the daemon did not answer: nothing was done.
type ConnectError struct {
	Host string
	Err  error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("cannot connect to the docker daemon at %s: %v", e.Host, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// readJSON decodes the body of resp into out, refusing bodies over limit.
func readJSON(resp *http.Response, limit int64, what string, out any) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fmt.Errorf("reading the daemon's %s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("the daemon's %s is larger than %d bytes; refused", what, limit)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("reading the daemon's %s: %w", what, err)
	}
	return nil
}

// drain reads (a bounded part of) a body whose content is not used, so
// that the connection can be used again, and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxSmallBody))
	resp.Body.Close()
}
