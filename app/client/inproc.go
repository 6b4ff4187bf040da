package client

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// InProcess returns a client that calls the API handler h directly, in
// this process: the MCP server the daemon serves over HTTP reaches the
// engine this way, through the same routes, checks and single gate as
// every other client. mark marks each request's context with how it came
// (api.WithTransport); token, when set, is sent as the bearer token, so a
// principal's own token travels with its requests.
//
// Answers stream: the response is returned once the handler has written
// its header, and its body is read while the handler still writes (NDJSON
// run output). Cancelling a request's context cancels the handler's.
func InProcess(h http.Handler, token string, mark func(context.Context) context.Context) *Client {
	return &Client{base: "http://senclaw", token: token, http: &http.Client{Transport: handlerTransport{h: h, mark: mark}}}
}

type handlerTransport struct {
	h    http.Handler
	mark func(context.Context) context.Context
}

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if t.mark != nil {
		ctx = t.mark(ctx)
	}
	req = req.Clone(ctx)
	if req.Body == nil {
		req.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeResponse{header: http.Header{}, body: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			pw.Close()
		}()
		t.h.ServeHTTP(w, req)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	return &http.Response{
		Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: pr, ContentLength: -1, Request: req,
	}, nil
}

// pipeResponse is the handler's side of an in-process answer.
type pipeResponse struct {
	header http.Header
	body   *io.PipeWriter
	once   sync.Once
	status int
	sent   http.Header // the header as it was when WriteHeader was called
	ready  chan struct{}
}

func (w *pipeResponse) Header() http.Header { return w.header }

func (w *pipeResponse) WriteHeader(code int) {
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush is a no-op: every Write reaches the reader at once.
func (w *pipeResponse) Flush() {}
