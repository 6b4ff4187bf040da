package engineapi

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
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
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
	"testing/iotest"
	"time"
)

// fakeDaemon serves handler on a Unix socket and returns a client of it.
func fakeDaemon(t *testing.T, cfg Config, handler http.Handler) *Client {
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
	cfg.Host = "unix://" + sock
	c, err := New(cfg)
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

func TestVersionNegotiation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, daemon, pinned, want string
	}{
		{"older_daemon", "1.41", "", "1.41"},
		{"newer_daemon", "1.60", "", MaxAPIVersion},
		{"same", MaxAPIVersion, "", MaxAPIVersion},
		{"no_header", "", "", "1.24"},
		{"garbage_header", "1.41/../../x", "", "1.24"},
		{"pinned", "1.41", "v1.43", "1.43"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var paths []string
			c := fakeDaemon(t, Config{APIVersion: tc.pinned}, pingAs(tc.daemon, &paths, &mu, nil))
			if _, err := c.ServerVersion(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ServerVersion(context.Background()); err != nil {
				t.Fatal(err)
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

// A failed ping leaves the version open: the next call pings again.
func TestVersionNegotiation_retriedAfterAFailedPing(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	pings := 0
	c := fakeDaemon(t, Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_ping" {
			mu.Lock()
			pings++
			n := pings
			mu.Unlock()
			if n == 1 {
				http.Error(w, `{"message":"starting"}`, http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("API-Version", "1.41")
			return
		}
		if r.URL.Path != "/v1.41/version" {
			t.Errorf("path %q", r.URL.Path)
		}
		_, _ = io.WriteString(w, `{"Version":"20.10.24"}`)
	}))
	if _, err := c.ServerVersion(context.Background()); err == nil || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("first call: %v, want the ping's failure", err)
	}
	v, err := c.ServerVersion(context.Background())
	if err != nil || v.Version != "20.10.24" || c.ClientVersion() != "1.41" {
		t.Fatalf("second call: %+v %v (API %s)", v, err, c.ClientVersion())
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var paths []string
			c := fakeDaemon(t, Config{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			_, err := c.ContainerInspect(context.Background(), "senclaw-s1")
			var e *Error
			if !errors.As(err, &e) || e.Status != tc.status {
				t.Fatalf("err = %v, want an *Error of status %d", err, tc.status)
			}
			if IsNotFound(err) != tc.notFound || IsConflict(err) != tc.conflict {
				t.Errorf("IsNotFound %v, IsConflict %v", IsNotFound(err), IsConflict(err))
			}
			if IsNotFound(fmt.Errorf("wrapped: %w", err)) != tc.notFound {
				t.Error("IsNotFound does not see through wrapping")
			}
			if !strings.Contains(e.Message, tc.wantInMsg) || len([]rune(e.Message)) > maxMessage+1 || strings.ContainsAny(e.Message, "\x1b\n") {
				t.Errorf("message %.100q (%d runes): want %q, bounded, no control characters", e.Message, len([]rune(e.Message)), tc.wantInMsg)
			}
		})
	}
}

// Answers over their cap are refused, not read whole.
func TestBodyCaps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		call func(*Client) error
		size int
	}{
		{"inspect", func(c *Client) error { _, err := c.ContainerInspect(context.Background(), "x"); return err }, maxInspectBody},
		{"stats", func(c *Client) error { _, err := c.ContainerStats(context.Background(), "x"); return err }, maxSmallBody},
		{"exec_inspect", func(c *Client) error { _, err := c.ExecInspect(context.Background(), "x"); return err }, maxSmallBody},
		{"list", func(c *Client) error { _, err := c.ContainerList(context.Background(), true); return err }, maxListBody},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, over := range []bool{false, true} {
				var mu sync.Mutex
				var paths []string
				c := fakeDaemon(t, Config{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
					// A JSON string padded to the cap (or one byte over).
					n := tc.size - len(`""`)
					if tc.name == "list" {
						n = tc.size - len(`[{"Id":""}]`)
					}
					if over {
						n++
					}
					pad := strings.Repeat(" ", n)
					if tc.name == "list" {
						_, _ = io.WriteString(w, `[{"Id":""}]`+pad)
						return
					}
					_, _ = io.WriteString(w, `{}`+pad)
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

func TestContainerList_filtersByLabel(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	c := fakeDaemon(t, Config{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
		var f map[string]map[string]bool
		if err := json.Unmarshal([]byte(r.URL.Query().Get("filters")), &f); err != nil || !f["label"]["senclaw.owner=a b"] || len(f["label"]) != 1 || r.URL.Query().Get("all") != "1" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		_, _ = io.WriteString(w, `[{"Id":"c1","Names":["/senclaw-s1"],"Labels":{"senclaw.kind":"sandbox"},"State":"running"}]`)
	}))
	list, err := c.ContainerList(context.Background(), true, "senclaw.owner=a b")
	if err != nil || len(list) != 1 || list[0].ID != "c1" || list[0].Names[0] != "/senclaw-s1" || list[0].Labels["senclaw.kind"] != "sandbox" || list[0].State != "running" {
		t.Fatalf("%+v %v", list, err)
	}
}

// An exec's console size goes only to a daemon of API 1.42 or later,
// which knows the field.
func TestExecCreate_consoleSizeFromAPI142(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"1.41", "1.42"} {
		var mu sync.Mutex
		var paths []string
		var got map[string]any
		c := fakeDaemon(t, Config{}, pingAs(v, &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewDecoder(r.Body).Decode(&got)
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"Id":"e1"}`)
		}))
		id, err := c.ExecCreate(context.Background(), "c1", ExecConfig{Cmd: []string{"true"}, Tty: true, ConsoleSize: &[2]uint{24, 80}})
		if err != nil || id != "e1" {
			t.Fatal(id, err)
		}
		_, has := got["ConsoleSize"]
		if has != (v == "1.42") || paths[0] != "/v"+v+"/containers/c1/exec" {
			t.Errorf("API %s: body %v, path %s", v, got, paths[0])
		}
	}
}

func TestConnectError(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Host: "unix://" + filepath.Join(t.TempDir(), "absent.sock")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Ping(context.Background())
	var ce *ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("ping of a missing socket: %v, want a ConnectError", err)
	}
	if _, err := c.ExecStart(context.Background(), "e1", ExecStartOptions{}); !errors.As(err, &ce) {
		t.Fatalf("exec start on a missing socket: %v, want a ConnectError", err)
	}
}

func TestNew_refusesOtherHosts(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"ssh://me@box", "/var/run/docker.sock", "tcp://", "tcp://h:2375/path", "unix://"} {
		if _, err := New(Config{Host: host}); err == nil {
			t.Errorf("New(%q) made a client", host)
		}
	}
	if _, err := New(Config{Host: "unix:///x.sock", APIVersion: "1.41/../x"}); err == nil {
		t.Error("a pinned version with a path in it was taken")
	}
	if _, err := New(Config{Host: "tcp://127.0.0.1:2376", CACert: filepath.Join(t.TempDir(), "ca.pem")}); err == nil {
		t.Error("a missing CA certificate was taken")
	}
}

// frame is one frame of a multiplexed stream.
func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 10_000) // 160 KB: more than one read
	cases := []struct {
		name           string
		stream         []byte
		oneByte        bool
		stdout, stderr string
		err            string
	}{
		{"interleaved", bytes.Join([][]byte{frame(1, "out1 "), frame(2, "err1 "), frame(1, "out2"), frame(2, "err2")}, nil), false, "out1 out2", "err1 err2", ""},
		{"split_into_bytes", bytes.Join([][]byte{frame(1, "hello "), frame(2, "oops"), frame(1, "world")}, nil), true, "hello world", "oops", ""},
		{"frame_bigger_than_a_read", bytes.Join([][]byte{frame(1, big), frame(2, big)}, nil), false, big, big, ""},
		{"big_frame_in_bytes", frame(1, big[:40_000]), true, big[:40_000], "", ""},
		{"stdin_frame_is_stdout", frame(0, "in"), false, "in", "", ""},
		{"empty_frames", bytes.Join([][]byte{frame(1, ""), frame(2, ""), frame(1, "x")}, nil), false, "x", "", ""},
		{"empty_stream", nil, false, "", "", ""},
		{"cut_in_header", frame(1, "abc")[:5], false, "", "", "unexpected EOF"},
		{"cut_in_payload", frame(1, "abcdef")[:11], false, "abc", "", "unexpected EOF"},
		{"claims_4GB", append([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, "short"...), false, "short", "", "unexpected EOF"},
		{"daemon_error", bytes.Join([][]byte{frame(1, "before"), frame(3, "exec failed\x1b[0m"), frame(1, "after")}, nil), false, "before", "", "exec failed"},
		{"raw_stream", []byte("plain text, not frames"), false, "", "", "unknown kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r io.Reader = bytes.NewReader(tc.stream)
			if tc.oneByte {
				r = iotest.OneByteReader(r)
			}
			var stdout, stderr bytes.Buffer
			n, err := Demux(&stdout, &stderr, r)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr || n != int64(len(tc.stdout)+len(tc.stderr)) {
				t.Errorf("stdout %.40q (%d), stderr %.40q (%d), n %d", stdout.String(), stdout.Len(), stderr.String(), stderr.Len(), n)
			}
			if strings.Contains(fmt.Sprint(err), "\x1b") {
				t.Errorf("the daemon's control characters reached the error: %q", err)
			}
		})
	}
}

// A failing writer stops the copy with its error.
func TestDemux_writeError(t *testing.T) {
	t.Parallel()
	_, err := Demux(failWriter{}, io.Discard, bytes.NewReader(frame(1, "x")))
	if err == nil || err.Error() != "closed" {
		t.Fatalf("err = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

// hijackDaemon upgrades exec start: it sends its first frame in the same
// write as the answer's headers, then echoes what it reads as stdout
// frames until the client ends its input, and sends "bye" on stderr.
func hijackDaemon(t *testing.T, status string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "tcp" || r.Header.Get("Connection") != "Upgrade" || r.Method != http.MethodPost {
			t.Errorf("request %s with Upgrade %q, Connection %q", r.Method, r.Header.Get("Upgrade"), r.Header.Get("Connection"))
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body["Detach"] != false {
			t.Errorf("exec start body %v (%v)", body, err)
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
		c := fakeDaemon(t, Config{}, pingAs("1.41", &paths, &mu, hijackDaemon(t, status)))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		hj, err := c.ExecStart(ctx, "e1", ExecStartOptions{ConsoleSize: &[2]uint{1, 2}})
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
		if _, err := Demux(&stdout, &stderr, hj.Reader); err != nil {
			t.Fatal(err)
		}
		hj.Close()
		if stdout.String() != "ready ping" || stderr.String() != "bye" || paths[0] != "/v1.41/exec/e1/start" {
			t.Errorf("%s: stdout %q, stderr %q, path %s", status, stdout.String(), stderr.String(), paths[0])
		}
	}
}

// A refused exec start is the daemon's error (a stopped container is a
// conflict), not a stream.
func TestExecStart_refused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	c := fakeDaemon(t, Config{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"message":"container c1 is not running"}`)
	}))
	_, err := c.ExecStart(context.Background(), "e1", ExecStartOptions{})
	if !IsConflict(err) || !strings.Contains(err.Error(), "is not running") {
		t.Fatalf("err = %v, want the conflict", err)
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
	c := fakeDaemon(t, Config{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		<-release
		conn.Close()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ExecStart(ctx, "e1", ExecStartOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %s, want the deadline", err, time.Since(start))
	}
}

func TestContainerWait(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	answered := make(chan struct{})
	c := fakeDaemon(t, Config{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("condition") != WaitRemoved {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-answered
		_, _ = io.WriteString(w, `{"StatusCode":3}`)
	}))
	wait, err := c.ContainerWait(context.Background(), "c1", WaitRemoved)
	if err != nil {
		t.Fatal(err)
	}
	close(answered)
	if code, err := wait(); code != 3 || err != nil {
		t.Fatalf("wait = %d, %v", code, err)
	}
}

func TestVersionLess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		less bool
	}{{"1.41", "1.42", true}, {"1.9", "1.41", true}, {"1.42", "1.42", false}, {"1.51", "1.42", false}, {"2.0", "1.99", false}} {
		if got := VersionLess(tc.a, tc.b); got != tc.less {
			t.Errorf("VersionLess(%s, %s) = %v", tc.a, tc.b, got)
		}
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
			hijackDaemon(t, "HTTP/1.1 101 UPGRADED")(w, r)
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
	c, err := New(Config{Host: host, CACert: ca})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := c.ServerVersion(context.Background()); err != nil || v.Version != "28.0.0" {
		t.Fatalf("version over TLS: %+v %v", v, err)
	}
	hj, err := c.ExecStart(context.Background(), "e1", ExecStartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hj.Conn.(*tls.Conn); !ok {
		t.Fatalf("the hijacked connection is a %T, not TLS", hj.Conn)
	}
	_ = hj.CloseWrite()
	_ = hj.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var stdout bytes.Buffer
	if _, err := Demux(&stdout, io.Discard, hj.Reader); err != nil || stdout.String() != "ready " {
		t.Fatalf("stream over TLS: %q %v", stdout.String(), err)
	}
	hj.Close()

	// Another CA (a self-signed certificate of its own for the same
	// address): the daemon's certificate is refused.
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
	bad, err := New(Config{Host: host, CACert: wrong})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("ping with the wrong CA: %v, want a certificate error", err)
	}
	if _, err := bad.ExecStart(context.Background(), "e1", ExecStartOptions{}); err == nil {
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
	c := fakeDaemon(t, Config{}, pingAs("1.45", &paths, &mu, func(w http.ResponseWriter, r *http.Request) {
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
	if _, err := c.ExecStart(ctx, "e1", ExecStartOptions{}); err == nil {
		t.Fatal("an answer with a head of 64 MiB was taken")
	}
	if n := <-written; n > 8<<20 {
		t.Fatalf("the client read %d MiB of an answer's head", n>>20)
	}
}
