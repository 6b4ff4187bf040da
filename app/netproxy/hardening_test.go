package netproxy

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// TestACompressedAnswerOfASecretsHostIsMasked: a host that compresses
// although it was not asked (it reads Accept_Encoding as CGI servers
// do, here always) has its answer decoded and masked; the proxy passes
// neither spelling of Accept-Encoding on.
func TestACompressedAnswerOfASecretsHostIsMasked(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	var asked []string
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k := range r.Header {
			if strings.Contains(strings.ToLower(strings.ReplaceAll(k, "_", "-")), "accept-encoding") {
				asked = append(asked, k)
			}
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, "you sent %s", r.Header.Get("Authorization"))
		zw.Close()
	}), "api.test")
	f.rules["s"] = Rules{Network: true, Secrets: []SecretUse{{Name: "gh", Token: token, Hosts: []string{fmt.Sprintf("api.test:%d", port)}}}}
	c := f.sandboxClient(t, "s")
	resp, body := do(t, c, "GET", fmt.Sprintf("https://api.test:%d/echo", port), map[string]string{"Authorization": "Bearer " + ph, "Accept_Encoding": "gzip"}, "")
	if resp.StatusCode != 200 || strings.Contains(body, "REAL-VALUE") || !strings.Contains(body, "you sent Bearer ***") {
		t.Errorf("the compressed echo reached the sandbox as %d %q; want it decoded and masked", resp.StatusCode, body)
	}
	if len(asked) > 0 {
		t.Errorf("the host was asked for compression by %v", asked)
	}
}

// TestAnHTTPRuleJudgesTheMethodAnOverrideNames: a host that honours
// X-HTTP-Method-Override would take an allowed POST for a DELETE; the
// rule judges the method the header names too, in any spelling.
func TestAnHTTPRuleJudgesTheMethodAnOverrideNames(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "api.test")
	f.rules["r"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port), Methods: []string{"GET", "POST"}}}}}
	c := f.sandboxClient(t, "r")
	url := fmt.Sprintf("https://api.test:%d/repo", port)
	for _, h := range []string{"X-HTTP-Method-Override", "x-http-method", "X_Method_Override"} {
		resp, _ := do(t, c, "POST", url, map[string]string{h: "delete"}, "x")
		if resp.StatusCode != 403 || !strings.Contains(resp.Header.Get("X-Senclaw-Refused"), "DELETE") {
			t.Errorf("POST with %s: delete: %d %q, want the rule's 403 for DELETE", h, resp.StatusCode, resp.Header.Get("X-Senclaw-Refused"))
		}
	}
	if resp, _ := do(t, c, "POST", url, map[string]string{"X-HTTP-Method-Override": "GET"}, "x"); resp.StatusCode != 200 {
		t.Errorf("POST overridden to an allowed GET: %d, want 200", resp.StatusCode)
	}
}

// TestAnH2CUpgradeIsNotPassedOn: HTTP/2 over the cleartext upgrade would
// carry requests the proxy does not read; the host never sees the
// upgrade, and the request is answered as HTTP/1.1.
func TestAnH2CUpgradeIsNotPassedOn(t *testing.T) {
	f := newLookFixture(t, map[string]Rules{}, true)
	var upgrades []string
	port := f.upstream.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upgrades = append(upgrades, r.Header.Get("Upgrade")+"|"+r.Header.Get("HTTP2-Settings"))
	}), "api.test")
	f.rules["u"] = Rules{Network: true, Ports: backends.PortRules{AllowHTTP: []backends.HTTPRule{{Host: fmt.Sprintf("api.test:%d", port), Methods: []string{"GET"}}}}}
	tc := rawLooked(t, f.listen(t, "u"), "api.test", port, f.engineRoots(t))
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: api.test:%d\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the h2c request: %v %v, want 200 as HTTP/1.1", resp, err)
	}
	if len(upgrades) != 1 || upgrades[0] != "|" {
		t.Errorf("the host saw the upgrade: %q", upgrades)
	}
}
