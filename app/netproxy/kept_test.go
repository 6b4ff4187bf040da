package netproxy

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestAValueAHostKeptComesBackMasked: a secret without a header goes
// anywhere in the head, the query too; a host that keeps what it is sent
// (an upload's name) and gives it back to a later request that carried
// no placeholder still has its answer masked: every answer of a secret's
// host is.
func TestAValueAHostKeptComesBackMasked(t *testing.T) {
	var mu sync.Mutex
	var names []string
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == "POST" {
			names = append(names, r.URL.Query().Get("name"))
			return
		}
		fmt.Fprintf(w, "assets: %s", strings.Join(names, ","))
	}), "api.test")
	f.rules["s"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}}}}
	c := f.sandboxClient(t, "s")
	base := fmt.Sprintf("https://api.test:%d/repos/o/r/releases/1/assets", port)
	do(t, c, "POST", base+"?name="+ph, nil, "x")
	_, body := do(t, c, "GET", base, nil, "")
	if strings.Contains(body, "REAL-VALUE") {
		t.Fatalf("the sandbox read the value back: %q", body)
	}
}
