package spaceapps

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// prober is the health probes' HTTP client: no proxy (whatever the
// engine's environment says), no keep-alive (a probe every 10 s holds no
// socket in between), no redirects (only a 2xx is healthy), each probe
// bounded by ProbeTimeout, and what the app answers bounded too (its
// headers here, its body when it is read): the answer is the app's.
var prober = &http.Client{
	Timeout: ProbeTimeout,
	Transport: &http.Transport{
		Proxy:                  nil,
		DialContext:            (&net.Dialer{Timeout: ProbeTimeout}).DialContext,
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// probeOnce asks url once: a 2xx is healthy, anything else an error that
// says what came back.
func probeOnce(ctx context.Context, url string) (code int, latency time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("User-Agent", "senclaw-health")
	began := time.Now()
	resp, err := prober.Do(req)
	latency = time.Since(began)
	if err != nil {
		return 0, latency, fmt.Errorf("no answer: %w", unwrapURLError(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, latency, fmt.Errorf("answered %d, not 2xx", resp.StatusCode)
	}
	return resp.StatusCode, latency, nil
}

func unwrapURLError(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		inner := u.Unwrap()
		if inner == nil {
			return err
		}
		if _, isOp := inner.(*net.OpError); isOp {
			return inner
		}
		err = inner
	}
}

// probe asks the running app's health path and records the answer.
func (s *Supervisor) probe(ctx context.Context, a *appState, url string) bool {
	code, latency, err := probeOnce(ctx, url)
	a.mu.Lock()
	a.health.record(s.clock.Now(), code, latency, err)
	a.mu.Unlock()
	return err == nil
}
