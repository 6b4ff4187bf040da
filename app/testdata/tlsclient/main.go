// Command tlsclient is a static HTTPS client for sandboxes that have
// none (the Docker tests' busybox image): it sends one request through
// the proxy of the environment (HTTPS_PROXY), trusting the CA bundle of
// SSL_CERT_FILE, as Go's net/http does, and prints
//
//	LABEL:STATUS BODY-OR-REFUSAL
//
// on one line, the refusal being the X-Senclaw-Refused header of a 403.
//
//	tlsclient [-H 'Name: value'] [-d body] [-hold] LABEL URL
//
// -hold writes the file "ready" after the request and waits for a file
// "dumped", so that a test can take a core dump of it.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	header := flag.String("H", "", "a header, 'Name: value'")
	data := flag.String("d", "", "a body, sent with POST")
	hold := flag.Bool("hold", false, "after the request, write ready and wait for dumped")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: tlsclient [-H 'Name: value'] [-d body] [-hold] LABEL URL")
		os.Exit(2)
	}
	label, url := flag.Arg(0), flag.Arg(1)
	method, body := http.MethodGet, io.Reader(nil)
	if *data != "" {
		method, body = http.MethodPost, strings.NewReader(*data)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		fmt.Printf("%s:error %v\n", label, err)
		os.Exit(1)
	}
	if name, value, ok := strings.Cut(*header, ":"); ok {
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Printf("%s:error %v\n", label, err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	what := strings.TrimSpace(string(b))
	if r := resp.Header.Get("X-Senclaw-Refused"); r != "" {
		what = "refused: " + r
	}
	fmt.Printf("%s:%d %s\n", label, resp.StatusCode, what)
	if *hold {
		if err := os.WriteFile("ready", nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for i := 0; i < 600; i++ {
			if _, err := os.Stat("dumped"); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
