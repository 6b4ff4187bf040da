package docker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// fakeDaemon serves handler on a Unix socket and returns a client of it
// (ep gives the rest: a pinned version).
func fakeDaemon(t *testing.T, ep endpoint, handler http.Handler) *apiClient {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	ep.Host = "unix://" + sock
	c, err := newAPIClient(ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// pingAs answers /_ping with API version v and records every other path.
func pingAs(v string, paths *[]string, mu *sync.Mutex, rest http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_ping" {
			if v != "" {
				w.Header().Set("API-Version", v)
			}
			_, _ = io.WriteString(w, "OK")
			return
		}
		mu.Lock()
		*paths = append(*paths, r.URL.Path)
		mu.Unlock()
		if rest != nil {
			rest(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"Version":"28.0.0","ApiVersion":"1.51","Os":"linux","Arch":"amd64"}`)
	})
}

// negotiate settles the client's API version, as the backend's first call
// does.
func negotiate(t *testing.T, c *apiClient) {
	t.Helper()
	if _, err := c.Ping(context.Background(), client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatal(err)
	}
}

func TestVersionNegotiation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, daemon, pinned, want string
	}{
		{"older_daemon", "1.41", "", "1.41"},
		{"newer_daemon", "1.99", "", client.MaxAPIVersion},
		{"same", client.MaxAPIVersion, "", client.MaxAPIVersion},
		{"pinned", "1.41", "v1.43", "1.43"},
		{"pinned_older", "1.45", "1.41", "1.41"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var paths []string
			c := fakeDaemon(t, endpoint{APIVersion: tc.pinned}, pingAs(tc.daemon, &paths, &mu, nil))
			for range 2 {
				if _, err := c.ServerVersion(context.Background(), client.ServerVersionOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.ClientVersion(); got != tc.want {
				t.Errorf("ClientVersion = %q, want %q", got, tc.want)
			}
			want := "/v" + tc.want + "/version"
			if len(paths) != 2 || paths[0] != want || paths[1] != want {
				t.Errorf("paths %q, want %q twice", paths, want)
			}
		})
	}
}

// A daemon's version header is not taken into the path unless it is a
// version; a failed ping leaves the version open, and the next call pings
// again.
func TestVersionNegotiation_garbageAndRetry(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	pings := 0
	var paths []string
	c := fakeDaemon(t, endpoint{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/_ping" {
			pings++
			switch pings {
			case 1: // the first call's
				w.Header().Set("API-Version", "1.41/../../x")
			case 2, 3: // the second call's HEAD, then GET
				http.Error(w, `{"message":"starting"}`, http.StatusServiceUnavailable)
			default:
				w.Header().Set("API-Version", "1.41")
			}
			return
		}
		paths = append(paths, r.URL.Path)
		_, _ = io.WriteString(w, `{"Version":"20.10.24"}`)
	}))
	for range 3 {
		_, _ = c.ServerVersion(context.Background(), client.ServerVersionOptions{})
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		if strings.Contains(p, "..") || strings.Contains(p, "/x/") {
			t.Errorf("the daemon's garbage reached the path: %q", p)
		}
	}
	if len(paths) != 3 || paths[2] != "/v1.41/version" || c.ClientVersion() != "1.41" {
		t.Fatalf("paths %q, API %s: want the third call at 1.41", paths, c.ClientVersion())
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x\x1b[31m\n", 100_000)
	cases := []struct {
		name      string
		status    int
		body      string
		notFound  bool
		conflict  bool
		wantInMsg string
	}{
		{"not_found", 404, `{"message":"No such container: senclaw-s1"}`, true, false, "No such container: senclaw-s1"},
		{"conflict", 409, `{"message":"container 1234 is not running"}`, false, true, "is not running"},
		{"text_body", 500, "plain failure\n", false, false, "plain failure"},
		{"empty_body", 502, "", false, false, "Bad Gateway"},
		{"huge_hostile_body", 500, `{"message":"` + strings.ReplaceAll(huge, "\n", `\n`) + `"}`, false, false, "x"},
		{"huge_hostile_text", 400, huge, false, false, "x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var paths []string
			c := fakeDaemon(t, endpoint{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			_, err := c.ContainerInspect(context.Background(), "senclaw-s1", client.ContainerInspectOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			if cerrdefs.IsNotFound(err) != tc.notFound || cerrdefs.IsConflict(err) != tc.conflict {
				t.Errorf("IsNotFound %v, IsConflict %v: %v", cerrdefs.IsNotFound(err), cerrdefs.IsConflict(err), err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantInMsg) || len([]rune(msg)) > maxMessage+300 || strings.ContainsAny(msg, "\x1b\n") {
				t.Errorf("message %.100q (%d runes): want %q, bounded, no control characters", msg, len([]rune(msg)), tc.wantInMsg)
			}
		})
	}
}

// Answers over their cap are refused, not read whole.
func TestBodyCaps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		call       func(*apiClient) error
		size       int
		head, tail string
	}{
		{"inspect", func(c *apiClient) error { _, err := inspectContainer(context.Background(), c, "x"); return err }, maxInspectBody, `{"Id":"`, `"}`},
		{"stats", func(c *apiClient) error { _, err := backendOn(c).ContainerStats(context.Background(), "x"); return err }, maxSmallBody, `{"name":"`, `"}`},
		{"exec_inspect", func(c *apiClient) error {
			_, err := c.ExecInspect(context.Background(), "x", client.ExecInspectOptions{})
			return err
		}, maxSmallBody, `{"ID":"`, `"}`},
		{"list", func(c *apiClient) error {
			_, err := c.ContainerList(context.Background(), client.ContainerListOptions{All: true})
			return err
		}, maxListBody, `[{"Id":"`, `"}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, over := range []bool{false, true} {
				var mu sync.Mutex
				var paths []string
				c := fakeDaemon(t, endpoint{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
					// One JSON value of the cap's size (or one byte over).
					n := tc.size - len(tc.head) - len(tc.tail)
					if over {
						n++
					}
					_, _ = io.WriteString(w, tc.head+strings.Repeat("a", n)+tc.tail)
				}))
				err := tc.call(c)
				if over && (err == nil || !strings.Contains(err.Error(), "larger than")) {
					t.Errorf("one byte over the cap: %v, want a refusal", err)
				}
				if !over && err != nil {
					t.Errorf("at the cap: %v", err)
				}
			}
		})
	}
}

// TestARedirectIsNoSuccess: a daemon that answers a stop with a redirect
// did not stop anything; the client says so (it refuses every redirect
// but a GET's), and that is not a daemon that does not answer.
func TestARedirectIsNoSuccess(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	c := fakeDaemon(t, endpoint{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v1.45/containers/other/stop", http.StatusMovedPermanently)
	}))
	_, err := c.ContainerStop(context.Background(), "senclaw-s1", stopGently)
	if err == nil {
		t.Fatal("a stop answered with a redirect succeeded")
	}
	var de *DaemonError
	if errors.As(backendOn(c).unreachable(err), &de) {
		t.Errorf("a redirect reads as a daemon not answering: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 {
		t.Errorf("the redirect was followed: %q", paths)
	}
}

// backendOn is a backend that speaks through c.
func backendOn(c *apiClient) *Backend {
	b := New(Options{})
	b.clientOnce.Do(func() { b.cli = c })
	return b
}

func TestConnectError(t *testing.T) {
	t.Parallel()
	b := New(Options{Host: "unix://" + filepath.Join(t.TempDir(), "absent.sock")})
	c, err := b.client()
	if err != nil {
		t.Fatal(err)
	}
	var de *DaemonError
	_, err = c.Ping(context.Background(), client.PingOptions{NegotiateAPIVersion: true})
	if !errors.As(b.unreachable(err), &de) {
		t.Fatalf("ping of a missing socket: %v, want a DaemonError", err)
	}
	_, err = c.execStart(context.Background(), "e1", false, nil)
	if !errors.As(b.unreachable(err), &de) {
		t.Fatalf("exec start on a missing socket: %v, want a DaemonError", err)
	}
}

func TestNewAPIClient_refusesOtherHosts(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"ssh://me@box", "/var/run/docker.sock", "tcp://", "tcp://h:2375/path", "unix://", "fd://"} {
		if _, err := newAPIClient(endpoint{Host: host}); err == nil {
			t.Errorf("newAPIClient(%q) made a client", host)
		}
	}
	if _, err := newAPIClient(endpoint{Host: "unix:///x.sock", APIVersion: "1.41/../x"}); err == nil {
		t.Error("a pinned version with a path in it was taken")
	}
	if _, err := newAPIClient(endpoint{Host: "tcp://127.0.0.1:2376", CACert: filepath.Join(t.TempDir(), "ca.pem")}); err == nil {
		t.Error("a missing CA certificate was taken")
	}
}

// hijackDaemon upgrades exec start: it sends its first frame in the same
// write as the answer's headers, then echoes what it reads as stdout
// frames until the client ends its input, and sends "bye" on stderr. The
// start's body is sent on got.
func hijackDaemon(t *testing.T, status string, got chan<- map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "tcp" || r.Header.Get("Connection") != "Upgrade" || r.Method != http.MethodPost {
			t.Errorf("request %s with Upgrade %q, Connection %q", r.Method, r.Header.Get("Upgrade"), r.Header.Get("Connection"))
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body["Detach"] != false {
			t.Errorf("exec start body %v (%v)", body, err)
		}
		if got != nil {
			got <- body
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		answer := status + "\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
		_, _ = conn.Write(append([]byte(answer), frame(1, "ready ")...))
		in := bufio.NewReader(io.MultiReader(buf.Reader, conn))
		p := make([]byte, 1024)
		for {
			n, err := in.Read(p)
			if n > 0 {
				_, _ = conn.Write(frame(1, string(p[:n])))
			}
			if err != nil {
				break
			}
		}
		_, _ = conn.Write(frame(2, "bye"))
	}
}

func TestExecStart_hijacks(t *testing.T) {
	t.Parallel()
	for _, status := range []string{"HTTP/1.1 101 UPGRADED", "HTTP/1.1 200 OK"} {
		var mu sync.Mutex
		var paths []string
		c := fakeDaemon(t, endpoint{}, pingAs("1.41", &paths, &mu, hijackDaemon(t, status, nil)))
		negotiate(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		hj, err := c.execStart(ctx, "e1", true, &[2]uint{1, 2})
		// The stream outlives the context of its start.
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", status, err)
		}
		if _, err := io.WriteString(hj.Conn, "ping"); err != nil {
			t.Fatal(err)
		}
		if err := hj.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		_ = hj.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := demux(&stdout, &stderr, hj.Reader); err != nil {
			t.Fatal(err)
		}
		hj.Close()
		if stdout.String() != "ready ping" || stderr.String() != "bye" || paths[0] != "/v1.41/exec/e1/start" {
			t.Errorf("%s: stdout %q, stderr %q, path %s", status, stdout.String(), stderr.String(), paths[0])
		}
	}
}

// An exec's console size goes only to a daemon of API 1.42 or later,
// which knows the field.
func TestExecStart_consoleSizeFromAPI142(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"1.41", "1.42"} {
		var mu sync.Mutex
		var paths []string
		got := make(chan map[string]any, 1)
		c := fakeDaemon(t, endpoint{}, pingAs(v, &paths, &mu, hijackDaemon(t, "HTTP/1.1 101 UPGRADED", got)))
		negotiate(t, c)
		hj, err := c.execStart(context.Background(), "e1", true, &[2]uint{24, 80})
		if err != nil {
			t.Fatal(err)
		}
		hj.Close()
		body := <-got
		if _, has := body["ConsoleSize"]; has != (v == "1.42") || body["Tty"] != true {
			t.Errorf("API %s: body %v", v, body)
		}
	}
}

// A refused exec start is the daemon's error (a stopped container is a
// conflict), with its reason, not a stream.
func TestExecStart_refused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	c := fakeDaemon(t, endpoint{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"message":"container c1 is not running\u001b[0m"}`)
	}))
	negotiate(t, c)
	_, err := c.execStart(context.Background(), "e1", false, nil)
	if !cerrdefs.IsConflict(err) || !strings.Contains(err.Error(), "is not running") || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("err = %q, want the conflict with its reason, printable", err)
	}
}

// A daemon that takes the request and never answers is given up on at
// the context's deadline.
func TestExecStart_silentDaemon(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c := fakeDaemon(t, endpoint{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		<-release
		conn.Close()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.execStart(ctx, "e1", false, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %s, want the deadline", err, time.Since(start))
	}
}

// Over tcp:// with a CA certificate the client speaks TLS, for plain
// calls and hijacked streams, and refuses a daemon the CA did not sign.
func TestTCPWithTLS(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewUnstartedServer(pingAs("1.41", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/start") {
			hijackDaemon(t, "HTTP/1.1 101 UPGRADED", nil)(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"Version":"28.0.0"}`)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	host := "tcp://" + srv.Listener.Addr().String()
	c, err := newAPIClient(endpoint{Host: host, CACert: ca})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := c.ServerVersion(context.Background(), client.ServerVersionOptions{}); err != nil || v.Version != "28.0.0" {
		t.Fatalf("version over TLS: %+v %v", v, err)
	}
	hj, err := c.execStart(context.Background(), "e1", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hj.Conn.(*tls.Conn); !ok {
		t.Fatalf("the hijacked connection is a %T, not TLS", hj.Conn)
	}
	_ = hj.CloseWrite()
	_ = hj.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var stdout bytes.Buffer
	if _, err := demux(&stdout, io.Discard, hj.Reader); err != nil || stdout.String() != "ready " {
		t.Fatalf("stream over TLS: %q %v", stdout.String(), err)
	}
	hj.Close()

	// Another CA (a self-signed certificate of its own for the same
	// address): the daemon's certificate is refused, and that is not a
	// daemon that does not answer.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "other"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "other.pem")
	if err := os.WriteFile(wrong, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	bad, err := newAPIClient(endpoint{Host: host, CACert: wrong})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = bad.Ping(context.Background(), client.PingOptions{NegotiateAPIVersion: true})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("ping with the wrong CA: %v, want a certificate error", err)
	}
	var de *DaemonError
	if b := New(Options{Host: host}); errors.As(b.unreachable(err), &de) {
		t.Errorf("a certificate refused reads as a daemon not answering: %v", err)
	}
	if _, err := bad.execStart(context.Background(), "e1", false, nil); err == nil {
		t.Fatal("exec start with the wrong CA succeeded")
	}
}

// The head of an upgrade's answer is read under a cap, as every other
// answer is: a daemon that sends header lines without end is refused
// after a bounded read, not kept in memory until the deadline.
func TestExecStart_headBounded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	written := make(chan int, 1)
	c := fakeDaemon(t, endpoint{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		n, _ := io.WriteString(conn, "HTTP/1.1 101 UPGRADED\r\n")
		line := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
		for n < 64<<20 {
			m, err := io.WriteString(conn, line)
			n += m
			if err != nil {
				break
			}
		}
		written <- n
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.execStart(ctx, "e1", false, nil); err == nil {
		t.Fatal("an answer with a head of 64 MiB was taken")
	}
	if n := <-written; n > 8<<20 {
		t.Fatalf("the client read %d MiB of an answer's head", n>>20)
	}
}
