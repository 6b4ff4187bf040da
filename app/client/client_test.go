package client

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestConnectSocketMakesOneConnection: the connection ConnectSocket makes
// to see that a daemon listens carries the first request (the CLI made a
// second one for it), and a client whose connection went away dials anew.
func TestConnectSocketMakesOneConnection(t *testing.T) {
	sock := filepath.Join(testutil.PrivateDir(t), "api.sock")
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

	if _, err := ConnectSocket(filepath.Join(testutil.PrivateDir(t), "none.sock"), time.Second); err == nil {
		t.Fatal("ConnectSocket to a socket nobody listens on succeeded")
	}
}

// TestConnectSocketFirstRequestLate: a client whose first request comes
// long after ConnectSocket (the MCP server's first tool call, minutes
// later) does not send it over the connection made then, which the
// daemon has closed meanwhile (it closes a connection that sends no
// request within its ReadHeaderTimeout, and all of them when it
// restarts): that request would fail with no dial to retry.
func TestConnectSocketFirstRequestLate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// gone makes the daemon drop the idle connection ConnectSocket made.
		gone func(t *testing.T, sock string, stop func())
	}{
		{"header_timeout", func(t *testing.T, sock string, stop func()) {}},
		{"daemon_restarted", func(t *testing.T, sock string, stop func()) {
			stop()
			serveOK(t, sock)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sock := filepath.Join(testutil.PrivateDir(t), "api.sock")
			stop := serveOK(t, sock)
			c, err := ConnectSocket(sock, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			tc.gone(t, sock, stop)
			time.Sleep(firstConnFresh + time.Second)
			if err := c.Do(context.Background(), http.MethodGet, "/status", nil, nil, nil); err != nil {
				t.Fatalf("the first request, %v after connecting: %v", firstConnFresh+time.Second, err)
			}
		})
	}
}

// serveOK serves {"ok":true} on a new Unix socket at sock, closing a
// connection that sends no request header within 200 ms (as the daemon
// does within 10 s), until stop.
func serveOK(t *testing.T, sock string) (stop func()) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok":true}`)) }),
		ReadHeaderTimeout: 200 * time.Millisecond,
	}
	go srv.Serve(ln)
	// The listener first: it unlinks sock once, before a new one is there.
	stop = func() { ln.Close(); srv.Close() }
	t.Cleanup(stop)
	return stop
}
