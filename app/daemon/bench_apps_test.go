package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/spaceapps"
	"github.com/senclaw/sandbox/internal/benchtest"
)

// benchApp makes an app folder: the example notes app with id and a
// manifest sandbox block.
func benchApp(t *testing.T, root, id, sandbox string) string {
	t.Helper()
	dir := filepath.Join(root, "src-"+id)
	os.MkdirAll(dir, 0o755)
	src, err := os.ReadFile(filepath.Join(repoRoot, "examples", "space-apps", "app.py"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "app.py"), src, 0o644)
	os.WriteFile(filepath.Join(dir, "senclaw-app.json"), []byte(`{"id": "`+id+`", "name": "`+id+`", "runtime": {"start": "python3 app.py"}, "sandbox": `+sandbox+`}`), 0o644)
	return dir
}

// TestBenchSpaceAppStartToHealthy measures, in one run, the time from
// `start` to the first 2xx from /health, sandboxed under bwrap through
// the daemon's socket, against the same server started directly and
// probed every 10 ms: the example app (Python, which spends most of it
// starting its interpreter), and busybox httpd (which starts at once, so
// the difference is the engine's). Target: at most +50 ms median. `make
// bench` runs it.
func TestBenchSpaceAppStartToHealthy(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal("busybox is needed (apt-get install busybox-static)")
	}
	root, _ := os.MkdirTemp("", "senclaw-bench-apps-")
	os.Chmod(root, 0o711)
	defer os.RemoveAll(root)
	c := benchtest.Start(t).Client
	ctx := context.Background()
	src, _ := os.ReadFile(filepath.Join(repoRoot, "examples", "space-apps", "app.py"))
	servers := []struct {
		id, start string
		argv      []string
		files     map[string]string
	}{
		{"notes", "python3 app.py", []string{"/usr/bin/python3", "app.py"}, map[string]string{"app.py": string(src)}},
		{"httpd", "exec busybox httpd -f -p 127.0.0.1:$PORT -h www", []string{busybox, "httpd", "-f", "-p", "127.0.0.1:$PORT", "-h", "www"}, map[string]string{"www/health": "ok\n"}},
	}
	for _, srv := range servers {
		app, direct := filepath.Join(root, "src-"+srv.id), filepath.Join(root, "direct-"+srv.id)
		for _, d := range []string{app, direct} {
			for name, data := range srv.files {
				os.MkdirAll(filepath.Dir(filepath.Join(d, name)), 0o755)
				os.WriteFile(filepath.Join(d, name), []byte(data), 0o644)
			}
		}
		os.WriteFile(filepath.Join(app, "senclaw-app.json"), []byte(`{"id": "`+srv.id+`", "name": "`+srv.id+`", "runtime": {"start": "`+srv.start+`"}, "sandbox": {"enabled": true, "readMode": "strict", "network": "off"}}`), 0o644)
		if _, err := c.RegisterApp(ctx, spaceapps.RegisterRequest{Dir: app}); err != nil {
			t.Fatal(err)
		}
		raw := func() (time.Duration, error) {
			port, _ := freeBenchPort()
			argv := make([]string, len(srv.argv))
			for i, a := range srv.argv {
				argv[i] = strings.ReplaceAll(a, "$PORT", strconv.Itoa(port))
			}
			start := time.Now()
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = direct
			cmd.Env = []string{"PATH=/usr/bin:/bin", "PORT=" + strconv.Itoa(port), "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}
			if err := cmd.Start(); err != nil {
				return 0, err
			}
			defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
			url := fmt.Sprintf("http://127.0.0.1:%d/health", port)
			hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
			for time.Since(start) < 30*time.Second {
				if resp, err := hc.Get(url); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						return time.Since(start), nil
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			return 0, fmt.Errorf("the direct server did not answer")
		}
		sandboxed := func() (time.Duration, error) {
			start := time.Now()
			r, err := c.StartApp(ctx, srv.id, true)
			d := time.Since(start)
			if err == nil && !r.OK {
				err = fmt.Errorf("start: %s", r.Note)
			}
			if _, serr := c.StopApp(ctx, srv.id); serr != nil && err == nil {
				err = serr
			}
			return d, err
		}
		var tRaw, tBox []time.Duration
		for i := 0; i < 23; i++ {
			dr, err := raw()
			if err != nil {
				t.Fatal(err)
			}
			db, err := sandboxed()
			if err != nil {
				t.Fatal(err)
			}
			if i >= 3 {
				tRaw, tBox = append(tRaw, dr), append(tBox, db)
			}
		}
		mr, mb := benchtest.Median(tRaw), benchtest.Median(tBox)
		fmt.Printf("BENCH Space App start to healthy (%s): direct %v, sandboxed (bwrap, through the socket) %v, +%v (target <= +50ms)\n",
			srv.id, mr.Round(time.Millisecond), mb.Round(time.Millisecond), (mb - mr).Round(time.Millisecond))
	}
}

// TestBenchMonitoring50Apps measures what watching 50 running sandboxed
// apps at the default rate (process sampling every second, a health probe
// every 10 s) costs the daemon: its CPU time over 30 s, as a share of one
// core, against the same daemon with no app; then with the dashboard's
// card polling the list every second. Target: at most 3% of one core.
func TestBenchMonitoring50Apps(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	root, _ := os.MkdirTemp("", "senclaw-bench-apps-")
	os.Chmod(root, 0o711)
	defer os.RemoveAll(root)
	d := benchtest.Start(t)
	c, pid := d.Client, d.Cmd.Process.Pid
	ctx := context.Background()
	window := 30 * time.Second
	measure := func(during func(stop <-chan struct{})) float64 {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { during(stop); close(done) }()
		before, at := cpuSeconds(pid), time.Now()
		time.Sleep(window)
		after, wall := cpuSeconds(pid), time.Since(at)
		close(stop)
		<-done
		return 100 * (after - before) / wall.Seconds()
	}
	idle := func(stop <-chan struct{}) { <-stop }
	time.Sleep(2 * time.Second)
	base := measure(idle)
	const n = 50
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("app%02d", i)
		if _, err := c.RegisterApp(ctx, spaceapps.RegisterRequest{Dir: benchApp(t, root, id, `{"enabled": true, "network": "off"}`)}); err != nil {
			t.Fatal(err)
		}
		if r, err := c.StartApp(ctx, id, true); err != nil || !r.OK {
			t.Fatalf("start %s: %+v %v", id, r, err)
		}
	}
	time.Sleep(5 * time.Second) // settle
	watched := measure(idle)
	polled := measure(func(stop <-chan struct{}) {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_, _ = c.Apps(ctx)
			}
		}
	})
	l, err := c.Apps(ctx)
	if err != nil || l.Overview.Running != n {
		t.Fatalf("running %+v %v", l.Overview, err)
	}
	fmt.Printf("BENCH monitoring %d running apps: the daemon uses %.2f%% of one core, %.2f%% more than with no app (%.2f%%) (target <= 3%%); with the card polling the list every second %.2f%%\n", n, watched, watched-base, base, polled)
}

// cpuSeconds is pid's user plus system CPU time.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}

func freeBenchPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
