package desktop

import (
	"bytes"
	"io"
	"net/http"

	"github.com/senclaw/sandbox/app/api"
)

// maxInprocBody bounds the part of a window request's body that is read
// ahead to learn its length; the API server bounds bodies itself.
const maxInprocBody = 64 << 20

// InprocHandler serves the window's requests with h (the API server): it
// marks each one as coming from the desktop window's own asset server,
// which the API trusts like its Unix socket (the window runs in this
// process, as this user) and answers with the page's "inproc" token.
//
// The webview hands request bodies over as streams of unknown length
// (ContentLength -1, even when empty), so the body is read ahead here and
// its length set, as a Go HTTP server would for a real request.
func InprocHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(api.WithTransport(r.Context(), "inproc", nil))
		if r.ContentLength < 0 && r.Body != nil {
			data, err := io.ReadAll(io.LimitReader(r.Body, maxInprocBody+1))
			if err != nil {
				http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
				return
			}
			if len(data) > maxInprocBody {
				// Too large to read ahead: pass it on as a stream.
				r.Body = struct {
					io.Reader
					io.Closer
				}{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
			} else {
				r.Body = io.NopCloser(bytes.NewReader(data))
				r.ContentLength = int64(len(data))
			}
		}
		h.ServeHTTP(w, r)
	})
}
