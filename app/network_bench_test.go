package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
)

// TestBenchNetwork prints, measured in one run: the throughput of a
// 100 MiB download through the egress proxy (curl in a bwrap sandbox ->
// forwarder -> Unix socket -> proxy -> local server) against curl on the
// host straight to the server; the median time of a small request through
// the proxy against direct (connection setup overhead); and what the
// forwarder adds to a sandbox's start. `make bench` runs it.
func TestBenchNetwork(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	f := newNetFixture(t)
	chunk := make([]byte, 1<<20)
	big := serveText(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(100<<20))
		for i := 0; i < 100; i++ {
			w.Write(chunk)
		}
	}))
	f.remote = big // the resolver's "remote" is whatever f.remote is now
	ctx := context.Background()
	on := f.create(t, SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true), CPUs: ptr(2.0)}) // no tighter CPU limit than the host curl has
	off := f.create(t, SandboxConfig{Backend: ptr("bwrap")})

	speeds := func(out string) []float64 {
		var v []float64
		for _, l := range strings.Fields(out) {
			if x, err := strconv.ParseFloat(l, 64); err == nil {
				v = append(v, x)
			}
		}
		slices.Sort(v)
		return v
	}
	median := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		return v[len(v)/2]
	}
	loop := func(n int, url, what string) string {
		return fmt.Sprintf("for i in $(seq %d); do curl -s -o /dev/null -w '%%{%s}\\n' %s; done", n, what, url)
	}
	host := func(script string) string {
		out, err := exec.Command("/bin/sh", "-c", script).Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	bigURL := fmt.Sprintf("http://example.test:%d/big", big)
	direct := median(speeds(host(loop(5, fmt.Sprintf("http://127.0.0.1:%d/big", big), "speed_download"))))
	proxied := median(speeds(f.sh(t, on.ID, loop(5, bigURL, "speed_download"))))
	tunnel := median(speeds(f.sh(t, on.ID, loop(5, "-p "+bigURL, "speed_download"))))
	socks := median(speeds(f.sh(t, on.ID, loop(5, "--socks5-hostname 127.0.0.1:1080 "+bigURL, "speed_download"))))
	t.Logf("100 MiB download, median of 5: direct %.0f MiB/s; through the proxy: CONNECT (as for https) %.0f MiB/s, ratio %.2f; SOCKS5 %.0f MiB/s, ratio %.2f; plain-HTTP absolute-form %.0f MiB/s, ratio %.2f (goal >= 0.7)",
		direct/(1<<20), tunnel/(1<<20), tunnel/direct, socks/(1<<20), socks/direct, proxied/(1<<20), proxied/direct)
	// The floor of any proxy in user space: a bare relay, no rules, no
	// sandbox, one hop (a TCP connection in, one out, io.Copy both ways,
	// which splices on Linux), measured in the same run.
	relay := bareRelay(t, big)
	relayed := median(speeds(host(loop(5, fmt.Sprintf("http://127.0.0.1:%d/big", relay), "speed_download"))))
	t.Logf("100 MiB download through a bare one-hop relay on the host (no rules, no sandbox): %.0f MiB/s, ratio %.2f: what any user-space hop costs here",
		relayed/(1<<20), relayed/direct)

	small := serveText(t, text("x"))
	f.remote2 = small
	d := median(speeds(host(loop(31, fmt.Sprintf("http://127.0.0.1:%d/", small), "time_total"))))
	p := median(speeds(f.sh(t, on.ID, loop(31, fmt.Sprintf("http://other.test:%d/", small), "time_total"))))
	t.Logf("small request (curl time_total, median of 31): direct %.2f ms, through the proxy %.2f ms: setup overhead %.2f ms", d*1000, p*1000, (p-d)*1000)

	run := func(id string) time.Duration {
		var ds []time.Duration
		for i := 0; i < 21; i++ {
			start := time.Now()
			if _, err := f.e.Exec(ctx, id, RunRequest{Argv: []string{"true"}}); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	mOff, mOn := run(off.ID), run(on.ID)
	t.Logf("a run of true through the engine (median of 21): network off %v, on %v: the forwarder and plumbing add %v", mOff, mOn, mOn-mOff)
	fwd := netfwdtest.Path(t)
	raw := func(argv ...string) time.Duration {
		var ds []time.Duration
		for i := 0; i < 51; i++ {
			start := time.Now()
			if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	bare, wrapped := raw("/bin/true"), raw(fwd, "--", "/bin/true")
	t.Logf("the forwarder alone (median of 51): true %v, senclaw-netfwd -- true %v: +%v", bare, wrapped, wrapped-bare)
}

// bareRelay listens on 127.0.0.1 and relays each connection to the local
// port to, with nothing but io.Copy; it returns its port.
func bareRelay(t *testing.T, to int) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", to))
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}
