// Package client talks to a running engine's API over its Unix socket (or
// over TCP with a token). The CLI, the MCP server and the tray use it; it
// is the only way they reach the engine.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Client is a connection to the engine's API.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// DialSocket returns a client of the API on the Unix socket at path; each
// connection is checked before anything is sent (DialUnix).
func DialSocket(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return DialUnix(ctx, path)
		},
		MaxIdleConnsPerHost: 16,
	}
	return &Client{base: "http://senclaw", http: &http.Client{Transport: tr}}
}

// ConnectSocket connects to the API's Unix socket at path now, within
// timeout, and returns a client whose first request goes over that
// connection: a command that checks that a daemon listens before it asks
// anything (the CLI) makes one connection, not two. The connection serves
// only a first request made within firstConnFresh; a later one dials anew
// (the daemon closes a connection that sends nothing within its
// ReadHeaderTimeout, and all of them when it restarts, and a request sent
// on a connection closed so fails with no dial to retry).
func ConnectSocket(path string, timeout time.Duration) (*Client, error) {
	conn, err := dialTimeout(path, timeout)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	first := conn
	take := func() net.Conn {
		mu.Lock()
		defer mu.Unlock()
		c := first
		first = nil
		return c
	}
	stale := time.AfterFunc(firstConnFresh, func() {
		if c := take(); c != nil {
			c.Close()
		}
	})
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if c := take(); c != nil {
				stale.Stop()
				return c, nil
			}
			return DialUnix(ctx, path)
		},
		MaxIdleConnsPerHost: 16,
	}
	return &Client{base: "http://senclaw", http: &http.Client{Transport: tr}}, nil
}

// firstConnFresh is how long the connection ConnectSocket makes waits
// for the first request: the CLI's follows at once; the daemon closes an
// idle one after 10 s.
const firstConnFresh = time.Second

// DialTCP returns a client of the API at baseURL (http://127.0.0.1:7878)
// authenticating with token.
func DialTCP(baseURL, token string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: &http.Client{}}
}

// Error is an error answer of the API.
type Error struct {
	Status  int    `json:"-"`
	Message string `json:"error"`
	Field   string `json:"field,omitempty"`
	Refused bool   `json:"refused,omitempty"`
	// Run is the record of a refused run.
	Run json.RawMessage `json:"run,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// IsRefused reports whether err is a run refused by policy or missing
// isolation.
func IsRefused(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Refused
}

// IsUnavailable reports whether err means no engine answered at all.
func IsUnavailable(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

// Do sends a request with a JSON body (nil for none) and decodes the JSON
// answer into out (nil to discard). path is under /api/sandbox, unless it
// starts with /api/ itself.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, err := c.send(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeAnswer(resp, out)
}

func (c *Client) send(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, error) {
	if p, _, _ := strings.Cut(path, "?"); strings.Contains(p, "//") || strings.HasSuffix(p, "/") {
		// An empty id ("/runs//log"): the engine would answer for some
		// other route, or 405.
		return nil, &Error{Status: http.StatusBadRequest, Message: "no id given"}
	}
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	u := c.base + "/api/sandbox" + path
	if strings.HasPrefix(path, "/api/") {
		u = c.base + path // another part of the API (/api/space/apps)
	}
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.http.Do(req)
}

func decodeAnswer(resp *http.Response, out any) error {
	if resp.StatusCode >= 400 {
		e := &Error{Status: resp.StatusCode}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(data, e) != nil || e.Message == "" {
			e.Message = fmt.Sprintf("the engine answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
		}
		return e
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Stream sends a run request with ?stream=1 and calls onOutput with each
// chunk of output as it arrives; the final answer is decoded into out.
func (c *Client) Stream(ctx context.Context, path string, body any, onOutput func(stream, data string), out any) error {
	resp, err := c.send(ctx, http.MethodPost, path, url.Values{"stream": {"1"}}, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
		return decodeAnswer(resp, out)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var line map[string]json.RawMessage
		if err := dec.Decode(&line); err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("the engine closed the stream before the run ended")
			}
			return fmt.Errorf("reading the run's stream: %w", err)
		}
		for k, v := range line {
			switch k {
			case "stdout", "stderr":
				var s string
				_ = json.Unmarshal(v, &s)
				onOutput(k, s)
			case "result":
				return json.Unmarshal(v, out)
			case "error":
				e := &Error{Status: http.StatusForbidden}
				_ = json.Unmarshal(v, e)
				return e
			}
		}
	}
}

// Ping checks that an engine answers, within d.
func (c *Client) Ping(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return c.Do(ctx, http.MethodGet, "/health", nil, nil, nil)
}
