package api

import (
	"net/http"
	"sync"
	"testing"
	"testing/fstest"
	"time"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// login redeems a fresh code and returns the session cookie.
func login(t *testing.T, base string) *http.Cookie {
	t.Helper()
	status, body := do(t, base, call{method: "POST", path: "/api/sandbox/login-codes"})
	if status != 200 {
		t.Fatal(body)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(base + "/login?code=" + body["code"].(string))
	if err != nil || resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %v %v", resp, err)
	}
	return resp.Cookies()[0]
}

// A dashboard that polls does not keep its session forever: it ends 12
// hours after the login. A session nothing uses ends sooner.
func TestSessionsHaveAnAbsoluteLifetime(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	dash := fstest.MapFS{"index.html": {Data: []byte("<html><head><!--senclaw-token--></head></html>")}}
	s := New(Options{Engine: testEngine(t), Token: testToken, Dashboard: dash, Now: clock.now})
	_, base := tcpServer(t, s)
	poll := func(c *http.Cookie, page string) int {
		status, _ := do(t, base, call{method: "GET", path: "/api/sandbox/status", headers: map[string]string{"Authorization": "Bearer " + page, "Cookie": "senclaw_session=" + c.Value}})
		return status
	}
	c := login(t, base)
	page := pageToken(t, base, c)
	for elapsed := time.Duration(0); elapsed < sessionTTL-time.Minute; elapsed += 10 * time.Minute {
		if status := poll(c, page); status != 200 {
			t.Fatalf("a polled session ended after %v: %d", elapsed, status)
		}
		clock.add(10 * time.Minute)
	}
	clock.add(2 * time.Minute)
	if status := poll(c, page); status != 401 {
		t.Fatalf("a session polled every 10 minutes still works %v after its login: %d", sessionTTL+time.Minute, status)
	}
	if c.MaxAge != int(sessionTTL.Seconds()) {
		t.Errorf("the cookie lives %d s, the session %v", c.MaxAge, sessionTTL)
	}

	idle := login(t, base)
	idlePage := pageToken(t, base, idle)
	clock.add(sessionIdle + time.Minute)
	if status := poll(idle, idlePage); status != 401 {
		t.Errorf("a session unused for %v still works: %d", sessionIdle+time.Minute, status)
	}
}

// Login codes that were never used are cleaned up, and what is kept is
// bounded however many codes and logins there are.
func TestExpiredLoginCodesAreCleanedUp(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	ss := newSessions(clock.now)
	for range 10 {
		ss.newCode()
	}
	clock.add(loginCodeTTL + time.Second)
	code := ss.newCode()
	if len(ss.codes) != 1 {
		t.Errorf("%d codes kept after 10 expired", len(ss.codes))
	}
	for range 3 * maxCodes {
		ss.newCode()
	}
	if len(ss.codes) > maxCodes {
		t.Errorf("%d codes kept", len(ss.codes))
	}
	if _, ok := ss.redeem(code); ok {
		t.Error("an evicted code still works") // the oldest went first
	}
	for range 3 * maxSessions {
		if _, ok := ss.redeem(ss.newCode()); !ok {
			t.Fatal("a fresh code does not work")
		}
	}
	if len(ss.live) > maxSessions {
		t.Errorf("%d sessions kept", len(ss.live))
	}
	clock.add(sessionTTL + time.Second)
	ss.newCode()
	if len(ss.live) != 0 {
		t.Errorf("%d expired sessions kept", len(ss.live))
	}
}
