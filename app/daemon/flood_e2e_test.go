package daemon

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
)

// floodScript runs inside the sandbox: four connections to the in-sandbox
// HTTP proxy at once, two sending a header line that never ends and two a
// CONNECT line that never ends, 256 MiB each. Each prints how much the
// proxy took before it hung up.
const floodScript = `
import os, socket, threading
heads = [b"GET http://127.0.0.1:9/ HTTP/1.1\r\nX-A: ", b"CONNECT ", b"GET http://127.0.0.1:9/ HTTP/1.1\r\nX-A: ", b"CONNECT "]
def flood(i, head):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(head)
    chunk, sent = b"A" * 65536, 0
    try:
        while sent < 256 << 20:
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    os.write(1, b"sent %d %d\n" % (i, sent))
ts = [threading.Thread(target=flood, args=(i, h)) for i, h in enumerate(heads)]
for t in ts: t.start()
for t in ts: t.join()
`

// rss is this process's resident memory in bytes.
func rss(t *testing.T) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestTheDaemonStaysSmallWhileASandboxFloodsItsProxy, end to end:
// sandboxed code floods the proxy with request heads that never end,
// and the daemon's RSS stays bounded (it went from 18 MB to 4 GB in
// 12 s); the proxy hangs up on each flood early.
func TestTheDaemonStaysSmallWhileASandboxFloodsItsProxy(t *testing.T) {
	requireTools(t, "bwrap", "python3")
	t.Setenv("PATH", filepath.Dir(netfwdtest.Path(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	data := cliEnv(t)
	served := serveInProcess(t, data)
	defer stopServed(t, served)
	code, out, errOut := senclaw(t, "create", "--name", "flood", "--network", "--memory", "256")
	id := strings.TrimSpace(out)
	if code != 0 || id == "" {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	const bound = 128 << 20
	base := rss(t)
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := senclaw(t, "run", "--sandbox", id, "--timeout", "120s", "--", "python3", "-c", floodScript)
		done <- result{code, out, errOut}
	}()
	peak := base
	var res result
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case res = <-done:
			break wait
		case <-tick.C:
			peak = max(peak, rss(t))
			if peak > base+bound {
				t.Errorf("the daemon grew from %d MiB to %d MiB while the sandbox flooded its proxy", base>>20, peak>>20)
				senclaw(t, "kill", id)
				res = <-done
				break wait
			}
		}
	}
	t.Logf("daemon RSS %d MiB before, at most %d MiB during the flood", base>>20, peak>>20)
	if res.code != 0 {
		t.Fatalf("the flood run: %d %q %q", res.code, res.out, res.err)
	}
	lines := 0
	for _, line := range strings.Split(strings.TrimSpace(res.out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "sent" {
			continue
		}
		lines++
		if n, _ := strconv.Atoi(f[2]); n >= 256<<20 {
			t.Errorf("connection %s: the proxy took all %d MiB", f[1], n>>20)
		}
	}
	if lines != 4 {
		t.Errorf("the flood reported %d connections: %q %q", lines, res.out, res.err)
	}
}
