package cli

import (
	"reflect"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// TestParseHTTPRule: --allow-http takes a host, then methods and paths,
// comma-separated, * for any; anything else is refused with the flag
// and the value named.
func TestParseHTTPRule(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]backends.HTTPRule{
		"api.github.com":                          {Host: "api.github.com"},
		"api.github.com GET,HEAD":                 {Host: "api.github.com", Methods: []string{"GET", "HEAD"}},
		"api.github.com:8443 * /repos/,/u/*/keys": {Host: "api.github.com:8443", Paths: []string{"/repos/", "/u/*/keys"}},
		"  x.test  get  /a  ":                     {Host: "x.test", Methods: []string{"get"}, Paths: []string{"/a"}},
	} {
		got, err := parseHTTPRule(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseHTTPRule(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "  ", "x.test GET /a extra"} {
		if _, err := parseHTTPRule(bad); err == nil {
			t.Errorf("parseHTTPRule(%q) was taken", bad)
		}
	}
	if s := httpRulesText([]backends.HTTPRule{{Host: "a.test"}, {Host: "b.test", Methods: []string{"GET"}, Paths: []string{"/x/"}}}); s != "a.test * *; b.test GET /x/" {
		t.Errorf("httpRulesText: %q", s)
	}
}
