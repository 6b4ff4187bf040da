package docker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/containerd/errdefs/pkg/errhttp"
	"github.com/moby/moby/client/pkg/versions"
)

// Attach and exec start are hijacked here rather than by the official
// client, which over TLS dials and shakes hands without the caller's
// context (a silent daemon holds the call for ever), reads the upgrade's
// answer without a bound, and reports a refusal only by its status
// ("unable to upgrade to tcp, received 409"), not the daemon's reason.

// hijacked is the raw connection of an attach or exec start, after the
// HTTP upgrade: Conn takes the input, Reader gives the output (what the
// daemon sent with its answer is in Reader's buffer, so read from it, not
// from Conn).
type hijacked struct {
	Conn   net.Conn
	Reader *bufio.Reader
}

// Close closes the connection.
func (h *hijacked) Close() error { return h.Conn.Close() }

// CloseWrite ends the input (the process reads end of file) and keeps the
// output open.
func (h *hijacked) CloseWrite() error {
	if cw, ok := h.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// execStart starts an exec attached to its streams: multiplexed (Demux)
// unless it has a terminal; size is [height, width] of its terminal, or
// nil. The exec was made by this client, so its API version is settled.
func (c *apiClient) execStart(ctx context.Context, execID string, tty bool, size *[2]uint) (*hijacked, error) {
	if versions.LessThan(c.ClientVersion(), "1.42") {
		size = nil // a field such a daemon does not know
	}
	body := struct {
		Detach      bool     `json:"Detach"`
		Tty         bool     `json:"Tty"`
		ConsoleSize *[2]uint `json:"ConsoleSize,omitempty"`
	}{Tty: tty, ConsoleSize: size}
	return c.hijack(ctx, "/exec/"+execID+"/start", nil, body)
}

// attach attaches to a container's output before it starts; the stream is
// multiplexed (Demux) unless the container has a terminal. The container
// was made by this client, so its API version is settled.
func (c *apiClient) attach(ctx context.Context, id string) (*hijacked, error) {
	return c.hijack(ctx, "/containers/"+id+"/attach", url.Values{"stream": {"1"}, "stdout": {"1"}, "stderr": {"1"}}, nil)
}

// hijack POSTs to path asking for the connection to be upgraded, and
// returns it once the daemon agreed. ctx bounds the dial and the
// handshake, not the stream after it.
func (c *apiClient) hijack(ctx context.Context, path string, q url.Values, in any) (h *hijacked, err error) {
	var body []byte
	if in != nil {
		if body, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	u := url.URL{Scheme: c.dial.scheme, Host: c.dial.urlHost(), Path: "/v" + c.ClientVersion() + path, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "senclaw")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")

	conn, err := c.dial.dialRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to the docker daemon at %s: %w", c.dial.host, err)
	}
	defer func() {
		if err != nil {
			conn.Close()
		}
	}()
	// The handshake ends at ctx's deadline, or when ctx is cancelled.
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if c.dial.tls != nil {
		tc := tls.Client(conn, c.dial.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, handshakeErr(ctx, err)
		}
		conn = tc
	}
	if err := req.Write(conn); err != nil {
		return nil, handshakeErr(ctx, err)
	}
	// The answer's head (and a refusal's body) is read under a cap; the
	// stream after it is not.
	head := &cappedReader{r: conn, left: maxSmallBody}
	br := bufio.NewReader(head)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		if errors.Is(err, errHeadTooLarge) {
			return nil, fmt.Errorf("the daemon's answer to %s is larger than %d bytes before its stream; refused", path, maxSmallBody)
		}
		return nil, handshakeErr(ctx, err)
	}
	switch {
	case resp.StatusCode >= 400:
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		msg := refusalMessage(data)
		if msg == "" {
			msg = resp.Status
		}
		return nil, &refusal{status: resp.StatusCode, message: msg}
	case resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		return nil, fmt.Errorf("the daemon did not upgrade the connection for %s: it answered %s", path, resp.Status)
	}
	if !stop() {
		// ctx ended just now: the deadline set may already be on conn.
		return nil, ctx.Err()
	}
	_ = conn.SetDeadline(time.Time{})
	head.left = -1
	return &hijacked{Conn: conn, Reader: br}, nil
}

// refusal is the daemon's refusal of an attach or exec start. It is the
// error kind of its status (cerrdefs.IsConflict: a container not running).
type refusal struct {
	status  int
	message string
}

func (e *refusal) Error() string { return "Error response from daemon: " + e.message }

func (e *refusal) Unwrap() error { return errhttp.ToNative(e.status) }

var errHeadTooLarge = errors.New("the answer's head is too large")

// cappedReader reads at most left bytes of r, then fails; with left < 0,
// all of it.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return c.r.Read(p)
	}
	if c.left == 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// handshakeErr reports ctx's end rather than the i/o timeout it caused
// (the connection's deadline may pass a moment before ctx's timer fires).
func handshakeErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return err
}
