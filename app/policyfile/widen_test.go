package policyfile

import (
	"fmt"
	"testing"

	"github.com/senclaw/sandbox/app/netproxy"
)

// TestMergeHTTPRulesNeverWiden: whatever host spelling, port, wildcard
// or path a project's HTTP rule uses, no request the owner's rules
// refuse passes the effective rules (as the proxy decides them).
func TestMergeHTTPRulesNeverWiden(t *testing.T) {
	t.Parallel()
	owner := mustParse(t, ownerPath, `{"network":true,"httpRules":[
		{"host":"api.example.org","methods":["GET"],"paths":["/v1/"]},
		{"host":"*.files.example.org","methods":["GET"],"paths":["/pub/**"]},
		{"host":"git.example.org:8443","methods":["GET"]}]}`)
	type probe struct {
		host         string
		port         int
		method, path string
	}
	var probes []probe
	for _, h := range []string{"api.example.org", "files.example.org", "x.files.example.org", "git.example.org", "www.example.org"} {
		for _, port := range []int{80, 443, 8443} {
			for _, m := range []string{"GET", "POST", "DELETE"} {
				for _, p := range []string{"/v1/items", "/v1x", "/admin", "/pub/a/b", "/"} {
					probes = append(probes, probe{h, port, m, p})
				}
			}
		}
	}
	for _, project := range []string{
		`{"httpRules":[{"host":"api.example.org:443"}]}`,
		`{"httpRules":[{"host":"api.example.org:80","methods":["POST"]}]}`,
		`{"httpRules":[{"host":"api.example.org.","methods":["DELETE"]}]}`,
		`{"httpRules":[{"host":"*.example.org"}]}`,
		`{"httpRules":[{"host":"*.api.example.org"}]}`,
		`{"httpRules":[{"host":"x.files.example.org","methods":["POST"]}]}`,
		`{"httpRules":[{"host":"*.files.example.org:443","paths":["/admin"]}]}`,
		`{"httpRules":[{"host":"files.example.org","methods":["GET"],"paths":["/pub/**"]},{"host":"files.example.org:443"}]}`,
		`{"httpRules":[{"host":"git.example.org","methods":["POST"]}]}`,
		`{"httpRules":[{"host":"*.example.org:8443","methods":["DELETE"]}]}`,
		`{"httpRules":[{"host":"api.example.org","methods":["GET"],"paths":["/v1/x"]},{"host":"api.example.org:443","methods":["POST"]}]}`,
	} {
		e := Merge(Layer{ownerPath, owner}, &Layer{projectPath, mustParse(t, projectPath, project)})
		for _, p := range probes {
			if netproxy.HTTPAllows(e.File.HTTPRules, p.host, p.port, p.method, p.path) && !netproxy.HTTPAllows(owner.HTTPRules, p.host, p.port, p.method, p.path) {
				t.Errorf("project %s lets %s %s through on %s:%d, which the owner's rules refuse (effective %v)", project, p.method, p.path, p.host, p.port, fmt.Sprint(e.File.HTTPRules))
				break
			}
		}
	}
	// What allows nothing more is taken, in any spelling.
	for _, project := range []string{
		`{"httpRules":[{"host":"API.example.org.:443","methods":["GET"],"paths":["/v1/items"]}]}`,
		`{"httpRules":[{"host":"*.www.example.org","methods":["POST"]}]}`,
		`{"httpRules":[{"host":"x.files.example.org:80","methods":["GET"],"paths":["/pub/a/"]}]}`,
	} {
		if e := Merge(Layer{ownerPath, owner}, &Layer{projectPath, mustParse(t, projectPath, project)}); len(e.Notes) != 0 || !e.Decided["httpRules"] {
			t.Errorf("project %s: notes %q, want it taken", project, e.Notes)
		}
	}
}
