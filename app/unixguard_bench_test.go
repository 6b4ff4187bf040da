package app

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/internal/testutil"
)

// unguardedBwrap is bwrap with the Unix socket guard taken off the spec:
// the same engine path as a real run (what `senclaw run` asks the daemon
// for), minus the guard, to measure what the guard adds.
type unguardedBwrap struct{ *bwrap.Backend }

func (u unguardedBwrap) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	spec.UnixGuard = nil
	return u.Backend.Start(ctx, spec)
}

// connectTimes is a Python program that times n connect()s to a Unix
// socket it listens on in the workspace, n to a TCP port it listens on
// inside,
// and m HTTP requests through the proxy to url, and prints the mean of
// each in microseconds.
const connectTimes = `
import socket, sys, time, urllib.request, os
n, m, url = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
# Nothing accepts: the kernel completes each connect into the backlog,
# which holds them all, so only connect() itself is timed.
u = socket.socket(socket.AF_UNIX); path = os.path.abspath("bench.sock")
if os.path.exists(path): os.unlink(path)
u.bind(path); u.listen(4096)
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(4096)
def each(f, k):
    start = time.perf_counter()
    for _ in range(k): f()
    return (time.perf_counter() - start) / k * 1e6
def unix():
    s = socket.socket(socket.AF_UNIX); s.connect(path); s.close()
def tcp():
    s = socket.socket(); s.connect(t.getsockname()); s.close()
def proxied():
    urllib.request.urlopen(url).read()
print("unix", each(unix, n)); print("tcp", each(tcp, n)); print("http", each(proxied, m))
`

// TestBenchUnixGuard prints what the Unix socket guard adds, measured in
// one run through the engine's run path with and without the guard: the
// median start-up of a one-shot `true` (budget: 2 ms more), and the cost
// of one connect() to a Unix socket and to a TCP port inside the sandbox
// and of one HTTP request through the proxy (two guarded connects: the
// program's to the forwarder, the forwarder's to the proxy socket).
// `make bench` runs it.
func TestBenchUnixGuard(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	testutil.RequireBwrap(t)
	var user *backends.Credential
	if os.Geteuid() == 0 {
		user = &backends.Credential{UID: 65534, GID: 65534}
	}
	port := serveText(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	remote := func(o *Options) {
		o.NetResolve = func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		o.NetTreatAsRemote = func(ap netip.AddrPort) bool { return int(ap.Port()) == port }
	}
	engines := []*Engine{
		newTestEngine(t, []backends.Backend{bwrap.New(bwrap.Options{SandboxUser: user}), direct.New()}, remote),
		newTestEngine(t, []backends.Backend{unguardedBwrap{bwrap.New(bwrap.Options{SandboxUser: user})}, direct.New()}, remote),
	}
	ctx := context.Background()
	oneShot := func(e *Engine, cfg SandboxConfig) time.Duration {
		start := time.Now()
		res, err := e.RunOnce(ctx, cfg, RunRequest{Argv: []string{"true"}})
		if err != nil || !res.Record.OK() {
			t.Fatalf("run: %v %+v", err, res)
		}
		return time.Since(start)
	}
	const runs = 60
	for _, c := range []struct {
		name string
		cfg  SandboxConfig
	}{{"network off", SandboxConfig{}}, {"network on", SandboxConfig{Network: ptr(true)}}} {
		times := [2][]time.Duration{}
		for i := 0; i < runs+5; i++ {
			for k, e := range engines {
				d := oneShot(e, c.cfg)
				if i >= 5 {
					times[k] = append(times[k], d)
				}
			}
		}
		g, u := median(times[0]), median(times[1])
		fmt.Printf("BENCH unixguard start-up (%s, one-shot true, median of %d): guarded %v, unguarded %v, added %v (budget <= 2ms)\n", c.name, runs, g, u, g-u)
	}
	// The connect costs: five runs of the program in each engine, in
	// turn, and the median of each figure.
	var sbs [2]*Sandbox
	for k, e := range engines {
		sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true)})
		if err != nil {
			t.Fatal(err)
		}
		sbs[k] = sb
	}
	url := fmt.Sprintf("http://bench.test:%d/", port)
	var got [2]map[string][]float64
	for round := 0; round < 5; round++ {
		for k, e := range engines {
			res, err := e.Exec(ctx, sbs[k].ID, RunRequest{Argv: []string{"python3", "-c", connectTimes, "2000", "300", url}, TimeoutMs: 120000})
			if err != nil || !res.Record.OK() {
				t.Fatalf("run: %v %+v %s", err, res.Record, res.Stderr)
			}
			if got[k] == nil {
				got[k] = map[string][]float64{}
			}
			for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
				if f := strings.Fields(line); len(f) == 2 {
					v, _ := strconv.ParseFloat(f[1], 64)
					got[k][f[0]] = append(got[k][f[0]], v)
				}
			}
		}
	}
	mid := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, w := range []struct{ key, what string }{
		{"unix", "connect() to a Unix socket in the workspace"},
		{"tcp", "connect() to a TCP port inside"},
		{"http", "HTTP request through the proxy"},
	} {
		g, u := mid(got[0][w.key]), mid(got[1][w.key])
		fmt.Printf("BENCH unixguard %s (median of 5 runs): guarded %.1f µs, unguarded %.1f µs, added %.1f µs\n", w.what, g, u, g-u)
	}
}
