// Command peerprobe reports, from inside a sandbox, what make
// bench-peers asks of it.
//
// peerprobe iso CANARY HOSTDIR ADDR prints its namespaces and file view;
// peerprobe fetch URL [proxy] times a local server's first byte and
// throughput through the sandbox's way out. It is static Go, so that it
// runs alike in every tool, a busybox container included.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 5 && os.Args[1] == "iso":
		err = iso(os.Args[2], os.Args[3], os.Args[4])
	case len(os.Args) == 3 && os.Args[1] == "fetch":
		err = fetch(os.Args[2], false)
	case len(os.Args) == 4 && os.Args[1] == "fetch" && os.Args[3] == "proxy":
		err = fetch(os.Args[2], true)
	default:
		fmt.Fprintln(os.Stderr, "usage: peerprobe iso CANARY HOSTDIR ADDR | peerprobe fetch URL [proxy]")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerprobe:", err)
		os.Exit(1)
	}
}

// iso prints, as JSON, the namespaces this process is in (the links of
// /proc/self/ns, which the harness compares with its own), how many
// processes it can see, whether it can read CANARY (a file the harness
// made outside any workspace), whether it can write in HOSTDIR (a host
// folder open to everyone) and whether it can connect to ADDR (a port on
// the host's 127.0.0.1 that no tool was told to open).
func iso(canary, hostDir, addr string) error {
	out := map[string]any{}
	ns := map[string]string{}
	for _, n := range []string{"net", "pid", "mnt", "user", "ipc", "uts", "cgroup"} {
		if l, err := os.Readlink("/proc/self/ns/" + n); err == nil {
			ns[n] = l
		}
	}
	out["ns"] = ns
	procs := 0
	if ents, err := os.ReadDir("/proc"); err == nil {
		for _, e := range ents {
			if strings.Trim(e.Name(), "0123456789") == "" {
				procs++
			}
		}
	}
	out["procs"] = procs
	_, err := os.ReadFile(canary)
	out["canary"] = err == nil
	f := filepath.Join(hostDir, fmt.Sprintf("written-%d", os.Getpid()))
	err = os.WriteFile(f, []byte("x"), 0o644)
	out["hostWrite"] = err == nil
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
	}
	out["loopback"] = err == nil
	out["uid"] = os.Getuid()
	return json.NewEncoder(os.Stdout).Encode(out)
}

// fetch times 20 small requests, each on a fresh connection (time to
// the first byte of the answer, the connection's set-up included), then
// three downloads of URL/big, and prints the medians and the way it
// went, as "ttfb_ms MiB_per_s WAY". It goes as a client there would:
// through the proxy the sandbox's environment names (http_proxy,
// HTTP_PROXY) unless no_proxy lists the host, else straight to URL;
// with forceProxy, through the proxy whatever no_proxy says.
func fetch(base string, forceProxy bool) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	var via *url.URL
	for _, k := range []string{"http_proxy", "HTTP_PROXY"} {
		if v := os.Getenv(k); v != "" && via == nil {
			if via, err = url.Parse(v); err != nil {
				return fmt.Errorf("%s=%q: %v", k, v, err)
			}
		}
	}
	for _, k := range []string{"no_proxy", "NO_PROXY"} {
		for _, h := range strings.Split(os.Getenv(k), ",") {
			if strings.TrimSpace(h) == u.Hostname() && !forceProxy {
				via = nil
			}
		}
	}
	way := "direct"
	if via != nil {
		way = "proxy " + via.Host
	}
	proxy := func(*http.Request) (*url.URL, error) { return via, nil }
	fresh := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: proxy, DisableKeepAlives: true,
		DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}}
	var ttfb []float64
	for i := 0; i < 20; i++ {
		start := time.Now()
		resp, err := fresh.Get(base + "/small")
		if err != nil {
			return err
		}
		took := time.Since(start)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("GET %s/small: %s", base, resp.Status)
		}
		ttfb = append(ttfb, float64(took)/float64(time.Millisecond))
	}
	var speed []float64
	for i := 0; i < 3; i++ {
		start := time.Now()
		resp, err := fresh.Get(base + "/big")
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			return fmt.Errorf("GET %s/big: %s, %d bytes, %v", base, resp.Status, n, err)
		}
		speed = append(speed, float64(n)/(1<<20)/time.Since(start).Seconds())
	}
	fmt.Printf("%.3f %.1f %s\n", median(ttfb), median(speed), way)
	return nil
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
