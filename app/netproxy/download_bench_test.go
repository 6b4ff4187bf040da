package netproxy

import (
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// BenchmarkDownload relays an 8 MiB answer from a local HTTPS server to a
// client, through a connection the proxy looks into and through a plain
// tunnel. Server, proxy and client share the process, so cpu-ns/op (the
// process's CPU time, user and system) is what each byte costs them all:
// the difference between the two is the proxy's, which the shared
// machine's load does not blur as it does the wall-clock time.
func BenchmarkDownload(b *testing.B) {
	const size = 8 << 20
	chunk := make([]byte, 1<<20)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for i := 0; i < size/len(chunk); i++ {
			w.Write(chunk)
		}
	})
	f := newLookFixture(b, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(b, h, "api.test", "tunnel.test")
	f.rules["b"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port)}}}}
	addr := f.listen(b, "b")
	pemCA, err := f.ca.CertPEM()
	if err != nil {
		b.Fatal(err)
	}
	engine := x509.NewCertPool()
	engine.AppendCertsFromPEM(pemCA)
	for _, c := range []struct {
		name, host string
		roots      *x509.CertPool
	}{{"looked", "api.test", engine}, {"tunnel", "tunnel.test", f.upstream.Pool()}} {
		b.Run(c.name, func(b *testing.B) {
			cl := client(addr, c.roots)
			cl.Timeout = time.Minute
			url := fmt.Sprintf("https://%s:%d/big", c.host, port)
			get := func() {
				resp, err := cl.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || n != size {
					b.Fatalf("read %d bytes: %v", n, err)
				}
			}
			get() // the connections, the leaf
			b.SetBytes(size)
			cpu0 := processCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				get()
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
