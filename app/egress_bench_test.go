package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestBenchInterception prints, measured in one run, what looking into
// TLS costs: curl in a bwrap sandbox fetches from one local HTTPS server
// by two names, one the proxy looks into (an HTTP rule names it: TLS is
// terminated with the engine's CA, the request judged, sent on over TLS
// of the proxy's own) and one it tunnels (plain CONNECT). Time to first
// byte of 200 small requests (over one kept-alive connection, and over
// fresh connections), and the throughput of a 50 MiB download. Goals:
// TTFB at most 1.5x the tunnel's, throughput at least 0.7x. `make bench`
// runs it.
func TestBenchInterception(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	needTools(t, "curl")
	ca := testutil.NewTestCA(t)
	chunk := make([]byte, 1<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(50<<20))
		for i := 0; i < 50; i++ {
			w.Write(chunk)
		}
	})
	port := ca.ServeTLS(t, mux, "looked.test", "tunnel.test")
	e := bwrapEngine(t, func(o *Options) {
		o.NetResolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "looked.test" || host == "tunnel.test" {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host (test resolver)")
		}
		o.NetTreatAsRemote = func(ap netip.AddrPort) bool { return int(ap.Port()) == port }
	})
	s := e.Settings()
	s.PinnedCAs = map[string]string{fmt.Sprintf("looked.test:%d", port): ca.PEM()}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true), CPUs: ptr(2.0),
		AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("looked.test:%d", port)}}})
	if err != nil {
		t.Fatal(err)
	}
	// The tunnel's curl trusts as many roots as the looked-into one (this
	// machine's and one CA), so that both read the same bundle at start.
	bundle, err := e.ca.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	roots := string(bundle[:len(bundle)-len(mustCAPEM(t, e))]) + ca.PEM()
	if err := os.WriteFile(filepath.Join(sb.Workspace, "tunnel-bundle.pem"), []byte(roots), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := func(script string) []float64 {
		res, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: script, TimeoutMs: 600000})
		if err != nil || !res.Record.OK() {
			t.Fatalf("%v %+v\n%s", err, res.Record, res.Stderr)
		}
		var v []float64
		for _, f := range strings.Fields(res.Stdout) {
			if x, err := strconv.ParseFloat(f, 64); err == nil {
				v = append(v, x)
			}
		}
		return v
	}
	median := func(v []float64) float64 {
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		return v[len(v)/2]
	}
	type target struct{ opts, url string }
	looked := target{"", fmt.Sprintf("https://looked.test:%d", port)}
	tunnel := target{"--cacert tunnel-bundle.pem", fmt.Sprintf("https://tunnel.test:%d", port)}
	// 200 requests on one connection: curl reuses it for every URL given.
	kept := func(tg target) string {
		return fmt.Sprintf("curl -s %s -w '%%{time_starttransfer}\\n'%s", tg.opts, strings.Repeat(" -o /dev/null "+tg.url+"/small", 200))
	}
	fresh := func(tg target, n int) string {
		return fmt.Sprintf("for i in $(seq %d); do curl -s %s -o /dev/null -w '%%{time_starttransfer}\\n' %s/small; done", n, tg.opts, tg.url)
	}
	// The downloads alternate, looked into then tunnelled, so that a
	// burst of load on the shared machine hits both alike.
	bigPairs := func() string {
		one := func(tg target) string {
			return fmt.Sprintf("curl -s %s -o /dev/null -w '%%{speed_download}\\n' %s/big", tg.opts, tg.url)
		}
		return "for i in 1 2 3 4; do " + one(looked) + "; " + one(tunnel) + "; done"
	}
	// Warm both paths (the CA, its leaf, the proxy's connection).
	sh(fresh(looked, 2) + "; " + fresh(tunnel, 2))
	var lk, tk, lf, tf, lb, tb []float64
	for round := 0; round < 2; round++ { // interleaved, so that load on the machine hits both
		lk = append(lk, sh(kept(looked))...)
		tk = append(tk, sh(kept(tunnel))...)
		lf = append(lf, sh(fresh(looked, 50))...)
		tf = append(tf, sh(fresh(tunnel, 50))...)
		for i, v := range sh(bigPairs()) {
			if i%2 == 0 {
				lb = append(lb, v)
			} else {
				tb = append(tb, v)
			}
		}
	}
	ms := func(v []float64) float64 { return median(v) * 1000 }
	ttfbRatio := median(lk) / median(tk)
	freshRatio := median(lf) / median(tf)
	speedRatio := median(lb) / median(tb)
	t.Logf("TTFB of 200 small requests on one connection, median: looked into %.3f ms, tunnel %.3f ms, ratio %.2f (goal <= 1.5)", ms(lk), ms(tk), ttfbRatio)
	t.Logf("TTFB of a small request on a fresh connection (TLS handshake included), median of 100: looked into %.3f ms, tunnel %.3f ms, ratio %.2f", ms(lf), ms(tf), freshRatio)
	t.Logf("50 MiB download, median of 8: looked into %.0f MiB/s, tunnel %.0f MiB/s, ratio %.2f (goal >= 0.7)", median(lb)/(1<<20), median(tb)/(1<<20), speedRatio)
	if len(lk) < 400 || len(tk) < 400 {
		t.Errorf("kept-alive runs measured %d and %d requests, want 400 each", len(lk), len(tk))
	}
	if ttfbRatio > 1.5 || speedRatio < 0.7 {
		t.Errorf("interception costs more than its goals: TTFB ratio %.2f (<= 1.5), throughput ratio %.2f (>= 0.7)", ttfbRatio, speedRatio)
	}
}

func mustCAPEM(t *testing.T, e *Engine) []byte {
	t.Helper()
	b, err := e.ca.CertPEM()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
