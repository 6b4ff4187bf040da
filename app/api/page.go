package api

import (
	"bytes"
	"errors"
	"html"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/senclaw/sandbox/app"
)

// loginCode answers POST /login-codes (socket only in practice: it needs
// the token) with a one-time URL for a browser.
// With ?page=1 the code goes into an owner-only login page instead
// (loginPages), whose path is answered and the code not.
func (s *Server) loginCode(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Query().Get("page") != "1" {
		writeJSON(w, http.StatusOK, map[string]any{"code": s.sessions.newCode(), "path": "/login?code="})
		return nil
	}
	code := s.sessions.newCode()
	file, err := s.pages.make(code)
	if err != nil {
		s.sessions.redeem(code) // spent: it was never handed out
		var np *errNoPage
		if errors.As(err, &np) {
			return &app.ConflictError{Reason: np.msg}
		}
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"file": file})
	return nil
}

// login redeems a one-time code: a session cookie and a redirect to the
// dashboard.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	id, ok := s.redeem(r.URL.Query().Get("code"))
	if !ok {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(noSessionPage("That login link is not valid any more: each link works once, within 60 seconds.")))
		return
	}
	http.SetCookie(w, sessionCookieFor(id))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// page serves the dashboard. index.html gets the session's page token
// (never the session id, which stays in its HttpOnly cookie); without a
// session it says how to open the dashboard.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name != "" && name != "index.html" && s.opts.Dashboard != nil {
		if f, err := s.opts.Dashboard.Open(name); err == nil {
			f.Close()
			http.ServeFileFS(w, r, s.opts.Dashboard, name)
			return
		}
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
	t, _ := r.Context().Value(transportKey{}).(transport)
	token := ""
	if t.kind == "inproc" || t.kind == "socket" {
		// The desktop window, in-process or attached to a running daemon
		// through its owner-only socket: no login needed.
		token = "inproc"
	} else if c, err := r.Cookie(sessionCookie); err == nil {
		token, _ = s.sessions.page(c.Value)
	}
	if token == "" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(noSessionPage("Open the dashboard with the command `senclaw open` (or copy the one-time link `senclaw url` prints into the browser).")))
		return
	}
	index, err := s.index()
	if err != nil {
		_, _ = w.Write([]byte(noSessionPage("The dashboard was not built into this binary (" + err.Error() + "). The REST API under /api/sandbox/ works.")))
		return
	}
	meta := `<meta name="senclaw-token" content="` + html.EscapeString(token) + `">`
	_, _ = w.Write(bytes.Replace(index, []byte("<!--senclaw-token-->"), []byte(meta), 1))
}

func (s *Server) index() ([]byte, error) {
	if s.opts.Dashboard == nil {
		return nil, fs.ErrNotExist
	}
	return fs.ReadFile(s.opts.Dashboard, "index.html")
}

func noSessionPage(msg string) string {
	return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>SenClaw Sandbox</title>
<style>body{font:16px system-ui,sans-serif;max-width:40em;margin:4em auto;padding:0 1em}code{background:#8882;padding:0 .3em}</style></head>
<body><h1>SenClaw Sandbox</h1><p>` + html.EscapeString(msg) + `</p></body></html>`
}

func pid() int { return os.Getpid() }

// daemonStop answers POST /daemon/stop and stops the daemon after the
// answer is sent.
func (s *Server) daemonStop(w http.ResponseWriter, r *http.Request) error {
	if s.opts.OnStop == nil {
		return &badRequest{msg: "this server cannot be stopped through the API"}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "stopping": true})
	go s.opts.OnStop()
	return nil
}
