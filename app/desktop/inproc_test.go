package desktop

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/senclaw/sandbox/app/api"
)

// webviewRequest builds a request the way Wails's asset server does: no
// Host check applies, and the body is a stream of unknown length.
func webviewRequest(method, path, body string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.ContentLength = -1
	r.Host = "wails"
	return r
}

func TestInprocHandler(t *testing.T) {
	t.Parallel()
	dash := fstest.MapFS{"index.html": {Data: []byte("<html><head><!--senclaw-token--></head><body>dash</body></html>")}}
	srv := api.New(api.Options{Engine: testEngine(t, testRoot(t)), Token: api.RandomToken(), Dashboard: dash, OnStop: func() {}})
	h := InprocHandler(srv)
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"page_gets_inproc_token", "GET", "/", "", 200, `<meta name="senclaw-token" content="inproc">`},
		{"api_is_trusted", "GET", "/api/sandbox/health", "", 200, `"ok":true`},
		// The webview sends an empty body as a stream of unknown
		// length; the API must see it as no body (defaults), not as
		// broken JSON.
		{"empty_body_post", "POST", "/api/sandbox/sandboxes", "", 201, `"sandbox"`},
		{"json_body", "PUT", "/api/sandbox/exec-policy", `{"execShell":true,"runPython":true}`, 200, `"execShell":true`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, webviewRequest(tc.method, tc.path, tc.body))
			body, _ := io.ReadAll(w.Result().Body)
			if w.Code != tc.status || !strings.Contains(string(body), tc.want) {
				t.Errorf("%s %s = %d %s, want %d containing %q", tc.method, tc.path, w.Code, body, tc.status, tc.want)
			}
		})
	}

	// Without the wrapper the same request is refused: the mark is what
	// makes the window trusted, not the path.
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, webviewRequest("GET", "/api/sandbox/health", ""))
	if w.Code != http.StatusForbidden {
		t.Errorf("an unmarked request got %d, want 403", w.Code)
	}
}

func TestInprocHandlerBody(t *testing.T) {
	t.Parallel()
	var got string
	var length int64
	h := InprocHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		got, length = string(data), r.ContentLength
	}))
	h.ServeHTTP(httptest.NewRecorder(), webviewRequest("PUT", "/x", `{"a":1}`))
	if got != `{"a":1}` || length != 7 {
		t.Errorf("body %q with length %d, want the body with its length", got, length)
	}
}
