package client

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestConnectSocketMakesOneConnection: the connection ConnectSocket makes
// to see that a daemon listens carries the first request (the CLI made a
// second one for it), and a client whose connection went away dials anew.
func TestConnectSocketMakesOneConnection(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/sandbox/close" {
				w.Header().Set("Connection", "close")
			}
			w.Write([]byte(`{"ok":true}`))
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	c, err := ConnectSocket(sock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Do(ctx, http.MethodGet, "/status", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("connecting and one request took %d connections, want 1", n)
	}
	if err := c.Do(ctx, http.MethodGet, "/close", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, http.MethodGet, "/status", nil, nil, nil); err != nil {
		t.Fatalf("after the server closed the first connection: %v", err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("three requests, one after a close, took %d connections, want 2", n)
	}

	if _, err := ConnectSocket(filepath.Join(t.TempDir(), "none.sock"), time.Second); err == nil {
		t.Fatal("ConnectSocket to a socket nobody listens on succeeded")
	}
}
