package engineapi

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
)

// Hijacked is the raw connection of an attach or exec start, after the
// HTTP upgrade: Conn takes the input, Reader gives the output (what the
// daemon sent with its answer is in Reader's buffer, so read from it, not
// from Conn).
type Hijacked struct {
	Conn   net.Conn
	Reader *bufio.Reader
}

// Close closes the connection.
func (h *Hijacked) Close() error { return h.Conn.Close() }

// CloseWrite ends the input (the process reads end of file) and keeps the
// output open.
func (h *Hijacked) CloseWrite() error {
	if cw, ok := h.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// hijack POSTs to path asking for the connection to be upgraded, and
// returns it once the daemon agreed. ctx bounds the dial and the
// handshake, not the stream after it.
func (c *Client) hijack(ctx context.Context, path string, q url.Values, in any) (h *Hijacked, err error) {
	if err := c.negotiate(ctx); err != nil {
		return nil, err
	}
	var body []byte
	if in != nil {
		if body, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	req, err := c.request(ctx, http.MethodPost, path, q, bytes.NewReader(body), true)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")

	conn, err := c.dialer(ctx)
	if err != nil {
		return nil, c.connErr(err)
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
	if c.tls != nil {
		tc := tls.Client(conn, c.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, c.connErr(err)
		}
		conn = tc
	}
	if err := req.Write(conn); err != nil {
		return nil, c.handshakeErr(ctx, err)
	}
	// The answer's head (and an error's body) is read under a cap; the
	// stream after it is not.
	head := &cappedReader{r: conn, left: maxSmallBody}
	br := bufio.NewReader(head)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		if errors.Is(err, errHeadTooLarge) {
			return nil, fmt.Errorf("the daemon's answer to %s is larger than %d bytes before its stream; refused", path, maxSmallBody)
		}
		return nil, c.handshakeErr(ctx, err)
	}
	switch {
	case resp.StatusCode >= 400:
		defer resp.Body.Close()
		return nil, errorOf(resp)
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
	return &Hijacked{Conn: conn, Reader: br}, nil
}

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
func (c *Client) handshakeErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return c.connErr(err)
}
