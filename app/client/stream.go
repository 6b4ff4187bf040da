package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// ReadFileTo copies the whole file path of sandbox id to w, as the
// engine streams it (no size cap but the workspace's); size, when set,
// hears the file's size before the first byte.
func (c *Client) ReadFileTo(ctx context.Context, id, path string, w io.Writer, size func(int64)) (int64, error) {
	q := url.Values{"path": {path}, "raw": {"1"}}
	resp, err := c.send(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id)+"/file", q, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return 0, decodeAnswer(resp, nil)
	}
	if size != nil {
		size(resp.ContentLength)
	}
	n, err := io.Copy(w, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("the engine sent %d of the file's %d bytes", n, resp.ContentLength)
	}
	return n, err
}

// WriteFileFrom writes r, size bytes (-1: unknown), over the file path
// of sandbox id, streamed: no size cap but the workspace's quota.
func (c *Client) WriteFileFrom(ctx context.Context, id, path string, r io.Reader, size int64) (int64, error) {
	if id == "" {
		return 0, &Error{Status: http.StatusBadRequest, Message: "no id given"}
	}
	q := url.Values{"path": {path}, "raw": {"1"}}
	u := c.base + "/api/sandbox/sandboxes/" + url.PathEscape(id) + "/file?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, r)
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Bytes int64 `json:"bytes"`
	}
	if err := decodeAnswer(resp, &out); err != nil {
		return 0, err
	}
	return out.Bytes, nil
}
