package api

import (
	"html"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/app/rundir"
)

// loginPages are owner-only HTML files that log a browser in, as Jupyter
// opens its browser: each holds a one-time code in a form that posts
// itself to POST /login, so the code never goes on a command line (a
// browser started on a login URL shows it to every user of the machine
// in /proc/PID/cmdline). They live in the runtime dir (0700), made
// exclusively (0600, no link followed), and go when their code is
// redeemed or expires, or when the daemon stops.
type loginPages struct {
	mu    sync.Mutex
	dir   *rundir.Dir
	url   string            // the dashboard's address the form posts to
	files map[string]string // code -> file name in dir
}

// serve lets pages be made in dir, posting to url ("" when the dashboard
// is not served over HTTP); stop removes those left.
func (p *loginPages) serve(dir *rundir.Dir, url string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dir, p.url, p.files = dir, url, map[string]string{}
}

func (p *loginPages) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range p.files {
		_ = p.dir.Remove(name)
	}
	p.dir, p.files = nil, nil
}

// errNoPage says why no login page can be made.
type errNoPage struct{ msg string }

func (e *errNoPage) Error() string { return e.msg }

// make writes the page for code and returns its path.
func (p *loginPages) make(code string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dir == nil {
		return "", &errNoPage{"this engine has no runtime dir to put a login page in (it is not a daemon)"}
	}
	if p.url == "" {
		return "", &errNoPage{"the dashboard is not served over HTTP (the daemon was started with --listen '', or its port was held by another user); the desktop window needs no login"}
	}
	name := "login-" + RandomToken()[:16] + ".html"
	f, err := p.dir.Create(name)
	if err != nil {
		return "", err
	}
	_, werr := f.WriteString(loginPageHTML(strings.TrimRight(p.url, "/")+"/login", code))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = p.dir.Remove(name)
		return "", werr
	}
	p.files[code] = name
	// Gone at the latest when the code expires, whatever happens to it.
	time.AfterFunc(loginCodeTTL+time.Second, func() { p.spent(code) })
	return filepath.Join(p.dir.Path, name), nil
}

// spent removes code's page, once it was redeemed or expired.
func (p *loginPages) spent(code string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if name, ok := p.files[code]; ok && p.dir != nil {
		_ = p.dir.Remove(name)
		delete(p.files, code)
	}
}

// loginPageHTML is the page: a form with the code that submits itself
// (a button without scripts), and the page's own #card, if it was opened
// at one, for the dashboard to open there.
func loginPageHTML(action, code string) string {
	return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>SenClaw Sandbox</title>
<meta name="referrer" content="no-referrer"></head>
<body style="font:16px system-ui,sans-serif;max-width:40em;margin:4em auto">
<form method="post" action="` + html.EscapeString(action) + `">
<input type="hidden" name="code" value="` + html.EscapeString(code) + `">
<input type="hidden" name="at" value="">
<p>Opening the SenClaw Sandbox dashboard&hellip; This page logs a browser in once, within 60 seconds.</p>
<noscript><button type="submit">Open the dashboard</button></noscript>
</form>
<script>var f = document.forms[0]; f.at.value = location.hash.slice(1); f.submit()</script>
</body></html>
`
}

// cardAnchor is what a dashboard's #card may be: a card's id
// ("space-apps"), nothing a page could be steered with.
var cardAnchor = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)

// dashboardAt is the dashboard's address at card at, or at its top when at
// is not a card's id.
func dashboardAt(at string) string {
	if cardAnchor.MatchString(at) {
		return "/#" + at
	}
	return "/"
}

// maxLoginForm bounds the body of POST /login.
const maxLoginForm = 4 << 10

// loginPosted redeems the code a login page posts. The answer sets the
// session cookie and then moves to the dashboard from this page: a
// navigation this origin starts, which sends the SameSite=Strict cookie
// (a redirect would stay part of the navigation the file:// page began,
// which is cross-site, and go without it).
func (s *Server) loginPosted(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
	code, at := "", ""
	if err := r.ParseForm(); err == nil {
		code, at = r.PostForm.Get("code"), r.PostForm.Get("at")
	}
	id, ok := s.redeem(code)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(noSessionPage("That login page is not valid any more: each one works once, within 60 seconds. Run senclaw open again.")))
		return
	}
	http.SetCookie(w, sessionCookieFor(id))
	// The card the login page was opened at goes along: a refresh, unlike
	// a redirect, keeps no #fragment of its own page.
	to := html.EscapeString(dashboardAt(at))
	_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>SenClaw Sandbox</title>
<meta http-equiv="refresh" content="0;url=` + to + `"></head><body><p><a href="` + to + `">Open the dashboard</a></p></body></html>
`))
}

// redeem turns a one-time code into a session, and removes its login
// page if it had one.
func (s *Server) redeem(code string) (string, bool) {
	id, ok := s.sessions.redeem(code)
	if code != "" {
		s.pages.spent(code)
	}
	return id, ok
}

func sessionCookieFor(id string) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL.Seconds())}
}
