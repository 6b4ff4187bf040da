package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// netProbe says which network namespace the command is in, which
// interfaces it sees, whether loopback carries a connection, and whether
// it may bring loopback down.
const netProbe = `
import errno, fcntl, os, socket, struct
print("ns", os.readlink("/proc/self/ns/net"))
print("ifaces", ",".join(sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])))
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.socket(); c.connect(l.getsockname()); print("loopback ok")
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", 0))  # SIOCSIFFLAGS: lo down
    print("down allowed")
except OSError as e:
    print("down", errno.errorcode[e.errno])
`

// warmNetns waits until p has namespaces ready.
func warmNetns(t *testing.T, p *aheadNetns) {
	t.Helper()
	p.refill()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		n, off := len(p.ready), p.off
		p.mu.Unlock()
		if n >= netnsReady {
			return
		}
		if off || time.Now().After(deadline) {
			t.Fatalf("%d network namespaces were made ahead (off %v)", n, off)
		}
	}
}

// probeLines runs netProbe's output into a map.
func probeLines(out string) map[string]string {
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, " ")
		got[k] = v
	}
	return got
}

// TestANetworkOffRunJoinsAFreshNamespace: a network-off run that the
// engine's thread forks joins a namespace made ahead (bwrap makes
// none), one of its own that no other run and not the engine is in, with
// loopback alone and up, which the sandbox cannot bring down; each
// namespace serves one run. Not parallel: it watches those made ahead.
func TestANetworkOffRunJoinsAFreshNamespace(t *testing.T) {
	testutil.RequireBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("only a root engine makes namespaces ahead")
	}
	fwd := netfwdtest.Path(t)
	warmNetns(t, netns)
	netns.mu.Lock()
	var ahead []string
	for _, f := range netns.ready {
		fi, err := f.Stat()
		must(t, err)
		ahead = append(ahead, fmt.Sprintf("net:[%d]", fi.Sys().(*syscall.Stat_t).Ino))
	}
	netns.mu.Unlock()
	engine, err := os.Readlink("/proc/self/ns/net")
	must(t, err)

	u := sandboxUsers(t)[0]
	b := New(Options{})
	seen := map[string]bool{}
	for i := 0; i < 2; i++ {
		r := run(t, b, guardedSpec(t, u, fwd, python, "-c", netProbe))
		if r.err != nil || r.status.Code != 0 {
			t.Fatalf("run: %v %+v\nstderr: %s", r.err, r.status, r.stderr)
		}
		got := probeLines(r.stdout)
		ns := got["ns"]
		if i == 0 && ns != ahead[len(ahead)-1] {
			t.Errorf("the run is in %s, not the namespace made ahead for it (%q)", ns, ahead)
		}
		if ns == engine || seen[ns] {
			t.Errorf("run %d is in %s: the engine is in %s, the runs before in %v", i, ns, engine, seen)
		}
		seen[ns] = true
		if got["ifaces"] != "lo" || got["loopback"] != "ok" {
			t.Errorf("the run sees interfaces %q, loopback %q; want lo alone, up", got["ifaces"], got["loopback"])
		}
		if got["down"] != "EPERM" {
			t.Errorf("bringing loopback down inside: %q, want EPERM", got["down"])
		}
	}
	if engineNow, _ := os.Readlink("/proc/self/ns/net"); engineNow != engine {
		t.Errorf("the engine moved from %s to %s", engine, engineNow)
	}
}

// TestANamespaceThatCannotBeJoinedStartsNothing: when the thread cannot
// join the run's namespace, bwrap (whose options then have no
// --unshare-net) is never started: the run is refused, with the reason,
// and its command does not run.
func TestANamespaceThatCannotBeJoinedStartsNothing(t *testing.T) {
	testutil.RequireBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("only a root engine makes namespaces ahead")
	}
	fwd := netfwdtest.Path(t)
	saved := netns
	t.Cleanup(func() { netns = saved })
	netns = &aheadNetns{make: func() (*os.File, error) { return os.Open("/dev/null") }}
	warmNetns(t, netns)

	u := sandboxUsers(t)[0]
	spec := guardedSpec(t, u, fwd, "sh", "-c", "echo ran > ran")
	p, err := New(Options{}).Start(context.Background(), spec)
	if err == nil {
		p.Kill()
		p.Wait()
		t.Fatal("the run started though its network namespace could not be joined")
	}
	if !strings.Contains(err.Error(), "joining the run's network namespace") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	if _, err := os.Stat(filepath.Join(spec.Workspace, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran: %v", err)
	}
}
