package netproxy

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReviewAnAnswerWithTwoContentEncodingsIsDecodedForTheMask: a
// secret's host that sends Content-Encoding twice, identity then gzip,
// has its gzip body (a client such as urllib3 or curl decodes both) read
// for the value, not passed on unread.
func TestReviewAnAnswerWithTwoContentEncodingsIsDecodedForTheMask(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		io.WriteString(zw, "you sent "+r.Header.Get("Authorization"))
		zw.Close()
		w.Header()["Content-Encoding"] = []string{"identity", "gzip"}
		w.Write(b.Bytes())
	}), "api.test")
	f.rules["z"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}, Header: "Authorization"}}}
	c := f.sandboxClient(t, "z")
	c.Transport.(*http.Transport).DisableCompression = true
	resp, body := do(t, c, "GET", fmt.Sprintf("https://api.test:%d/", port), map[string]string{"Authorization": "Bearer " + ph}, "")
	got := body
	if zr, err := gzip.NewReader(strings.NewReader(body)); err == nil {
		b, _ := io.ReadAll(zr)
		got = string(b)
	}
	if strings.Contains(got, "REAL-VALUE") {
		t.Errorf("%d, Content-Encoding %q: the sandbox read the value in %q", resp.StatusCode, resp.Header.Values("Content-Encoding"), got)
	}
}
