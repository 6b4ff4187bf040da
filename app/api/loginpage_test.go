package api

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

var pageCode = regexp.MustCompile(`name="code" value="([0-9a-f]{64})"`)

// TestALoginPageWorksOnceWithinAMinute: POST /login-codes?page=1 writes
// an owner-only page in the runtime dir (not the code in the answer)
// whose form posts the code to POST /login, as a browser opening the
// file would (Origin: null). The code logs in once; the page is gone
// then; a second post, one after 60 s, and one from another site are
// refused, and a link of senclaw url expires after 60 s too.
func TestALoginPageWorksOnceWithinAMinute(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	dash := fstest.MapFS{"index.html": {Data: []byte("<html><head><!--senclaw-token--></head></html>")}}
	s := New(Options{Engine: testEngine(t), Token: testToken, Dashboard: dash, Now: clock.now})
	rt := filepath.Join(testDir(t), "rt")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan DaemonInfo, 1)
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, DaemonOptions{RuntimeDir: rt, Listen: "127.0.0.1:0", Ready: func(i DaemonInfo) { ready <- i }})
	}()
	info := <-ready
	defer func() { cancel(); <-done }()
	base := info.URL

	newPage := func() (file, code string) {
		t.Helper()
		status, body := do(t, base, call{method: "POST", path: "/api/sandbox/login-codes?page=1"})
		file, _ = body["file"].(string)
		if status != 200 || file == "" || body["code"] != nil {
			t.Fatalf("a login page: %d %v", status, body)
		}
		fi, err := os.Lstat(file)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || filepath.Dir(file) != rt {
			t.Fatalf("the page %s: %v %v", file, fi, err)
		}
		data, _ := os.ReadFile(file)
		m := pageCode.FindStringSubmatch(string(data))
		if m == nil || !strings.Contains(string(data), `action="`+base+`/login"`) {
			t.Fatalf("the page: %s", data)
		}
		return file, m[1]
	}
	post := func(code, origin string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"code": {code}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	file, code := newPage()
	resp := post(code, "null")
	page := checkedBody(t, resp)
	if resp.StatusCode != 200 || len(resp.Cookies()) != 1 || !strings.Contains(string(page), `http-equiv="refresh" content="0;url=/"`) {
		t.Fatalf("posting the page's code: %d %s", resp.StatusCode, page)
	}
	pageToken(t, base, resp.Cookies()[0]) // the session works
	testutil.WaitFor(t, 5*time.Second, "the used page to be removed", func() bool { _, err := os.Lstat(file); return os.IsNotExist(err) })
	if resp := post(code, "null"); checkedBody(t, resp) == nil || resp.StatusCode != 401 {
		t.Errorf("a code posted twice: %d", resp.StatusCode)
	}

	file, code = newPage()
	clock.add(loginCodeTTL + time.Second)
	if resp := post(code, "null"); checkedBody(t, resp) == nil || resp.StatusCode != 401 {
		t.Errorf("a code posted after %v: %d", loginCodeTTL+time.Second, resp.StatusCode)
	}
	if _, err := os.Lstat(file); !os.IsNotExist(err) {
		t.Error("an expired page was left")
	}

	_, code = newPage()
	if resp := post(code, "http://evil.example"); resp.StatusCode != 403 {
		t.Errorf("a code posted from another site: %d", resp.StatusCode)
	}

	status, body := do(t, base, call{method: "POST", path: "/api/sandbox/login-codes"})
	if status != 200 {
		t.Fatal(body)
	}
	clock.add(61 * time.Second)
	if resp, _ := http.Get(base + "/login?code=" + body["code"].(string)); resp.StatusCode != 401 {
		t.Errorf("a login link used after 61 s: %d", resp.StatusCode)
	}
	if loginCodeTTL > time.Minute {
		t.Errorf("a login code lives %v", loginCodeTTL)
	}
}

// TestALoginPageOpensTheDashboardAtItsCard: the login page sends its own
// #card (a page opened at #space-apps) with the code, and the answer's
// refresh goes to the dashboard there: a refresh keeps no fragment, so
// without it the person lands at the top. Anything but a card's id goes
// to the top, escaped nowhere into the page.
func TestALoginPageOpensTheDashboardAtItsCard(t *testing.T) {
	t.Parallel()
	dash := fstest.MapFS{"index.html": {Data: []byte("<html><head><!--senclaw-token--></head></html>")}}
	s := New(Options{Engine: testEngine(t), Token: testToken, Dashboard: dash})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan DaemonInfo, 1)
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, DaemonOptions{RuntimeDir: filepath.Join(testDir(t), "rt"), Listen: "127.0.0.1:0", Ready: func(i DaemonInfo) { ready <- i }})
	}()
	info := <-ready
	defer func() { cancel(); <-done }()

	_, body := do(t, info.URL, call{method: "POST", path: "/api/sandbox/login-codes?page=1"})
	data, err := os.ReadFile(body["file"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `name="at"`) || !strings.Contains(string(data), "location.hash") {
		t.Fatalf("the login page does not send its #card: %s", data)
	}
	for _, c := range []struct{ at, to string }{
		{"space-apps", "/#space-apps"},
		{"", "/"},
		{`x"><script>alert(1)</script>`, "/"},
		{"//evil.example", "/"},
		{"Space%20Apps", "/"},
	} {
		_, sb := do(t, info.URL, call{method: "POST", path: "/api/sandbox/login-codes"})
		form := url.Values{"code": {sb["code"].(string)}, "at": {c.at}}
		req, _ := http.NewRequest("POST", info.URL+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "null")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page := string(checkedBody(t, resp))
		if resp.StatusCode != 200 || !strings.Contains(page, `http-equiv="refresh" content="0;url=`+c.to+`"`) || !strings.Contains(page, `href="`+c.to+`"`) {
			t.Errorf("at %q: %d %s", c.at, resp.StatusCode, page)
		}
		if strings.Contains(page, "<script") {
			t.Errorf("at %q made its way into the page: %s", c.at, page)
		}
	}
}
