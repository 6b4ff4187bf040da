package policyfile

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const ownerPath, projectPath = "/home/o/.config/senclaw/policy.json", "/p/.senclaw/policy.json"

func mustParse(t *testing.T, name, text string) File {
	t.Helper()
	f, err := Parse(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func value(e Effective, key string) Value {
	for _, v := range e.Values {
		if v.Key == key {
			return v
		}
	}
	return Value{}
}

// TestMergeIgnoresWhatWidens is the layering case: the owner
// says strict, one domain, 512 MB; the project asks for open, a second
// domain and more memory, and gets none of it, with a note each.
func TestMergeIgnoresWhatWidens(t *testing.T) {
	t.Parallel()
	owner := mustParse(t, ownerPath, `{"fsMode":"strict","network":true,"allowedDomains":["api.example.org"],"limits":{"memoryMb":512,"cpus":1}}`)
	project := mustParse(t, projectPath, `{"fsMode":"open","allowedDomains":["api.example.org","evil.example.net"],"limits":{"memoryMb":4096,"cpus":0.5}}`)
	e := Merge(Layer{ownerPath, owner}, &Layer{projectPath, project})
	if e.File.FsMode != "strict" || !slices.Equal(e.File.AllowedDomains, []string{"api.example.org"}) || *e.File.Limits.MemoryMB != 512 {
		t.Fatalf("effective %+v", e.File)
	}
	if len(e.Notes) != 3 {
		t.Fatalf("notes %q, want 3", e.Notes)
	}
	for i, key := range []string{"fsMode", "allowedDomains[1]", "limits.memoryMb"} {
		if !strings.Contains(e.Notes[i], projectPath+": "+key+" ") {
			t.Errorf("note %d %q does not name %s", i, e.Notes[i], key)
		}
	}
	if v := value(e, "limits.cpus"); v.Value != 0.5 || v.Source != projectPath {
		t.Errorf("cpus %+v: the project may narrow it", v)
	}
	if v := value(e, "fsMode"); v.Source != ownerPath {
		t.Errorf("fsMode from %q", v.Source)
	}
	if v := value(e, "allowedDomains"); v.Source != projectPath {
		t.Errorf("allowedDomains from %q", v.Source)
	}
}

func TestMergeNarrows(t *testing.T) {
	t.Parallel()
	owner := mustParse(t, ownerPath, `{"fsMode":"open","allowlist":["/data"],"network":true,"ports":{"listen":[8000,8001],"loopback":[5432]},"env":["A","B"],"allowDirect":true}`)
	for _, c := range []struct {
		name, project string
		check         func(e Effective) bool
		notes         int
	}{
		{"fs_strict", `{"fsMode":"strict"}`, func(e Effective) bool { return e.File.FsMode == "strict" }, 0},
		{"allowlist_below", `{"allowlist":["/data/x","/etc"]}`, func(e Effective) bool { return slices.Equal(e.File.Allowlist, []string{"/data/x"}) }, 1},
		{"network_off", `{"network":false}`, func(e Effective) bool { return !*e.File.Network }, 0},
		{"domains_any_owner", `{"allowedDomains":["a.org"]}`, func(e Effective) bool { return slices.Equal(e.File.AllowedDomains, []string{"a.org"}) }, 0},
		{"ports_subset", `{"ports":{"listen":[8001,9000],"loopback":[]}}`, func(e Effective) bool {
			return slices.Equal(e.File.Ports.Listen, []int{8001}) && len(e.File.Ports.Loopback) == 0
		}, 1},
		{"env_subset", `{"env":["A","C"]}`, func(e Effective) bool { return slices.Equal(e.File.Env, []string{"A"}) }, 1},
		{"owner_only", `{"allowDirect":true,"mountAllow":["/srv"],"allowedSockets":["/run/x.sock"],"agentShell":{"sandboxed":false}}`, func(e Effective) bool { return true }, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := Merge(Layer{ownerPath, owner}, &Layer{projectPath, mustParse(t, projectPath, c.project)})
			if !c.check(e) {
				t.Errorf("effective %+v", e.File)
			}
			if len(e.Notes) != c.notes {
				t.Errorf("notes %q, want %d", e.Notes, c.notes)
			}
		})
	}
}

// TestMergeDomainsNoneLeftIsNoNetwork: a project naming only domains the
// owner does not allow gets no network, never the owner's whole list.
func TestMergeDomainsNoneLeftIsNoNetwork(t *testing.T) {
	t.Parallel()
	owner := mustParse(t, ownerPath, `{"network":true,"allowedDomains":["*.example.org"]}`)
	e := Merge(Layer{ownerPath, owner}, &Layer{projectPath, mustParse(t, projectPath, `{"allowedDomains":["example.net"]}`)})
	if *e.File.Network {
		t.Fatalf("network on: %+v", e.File)
	}
	e = Merge(Layer{ownerPath, owner}, &Layer{projectPath, mustParse(t, projectPath, `{"allowedDomains":["api.example.org"]}`)})
	if !*e.File.Network || len(e.Notes) != 0 {
		t.Fatalf("a subdomain of *.example.org: %+v %q", e.File, e.Notes)
	}
}

// TestParseBrokenSaysLineAndColumn: a broken file is refused with where.
func TestParseBrokenSaysLineAndColumn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		line, col  int
		says       string
	}{
		{"syntax", "{\n  \"fsMode\": \"strict\",\n  \"network\": tru\n}", 3, 17, "not valid JSON"},
		{"unknown_key", "{\n  \"fsMode\": \"strict\",\n    \"netwrok\": true\n}", 3, 5, `unknown key "netwrok"`},
		{"wrong_type", "{\n  \"limits\": {\"memoryMb\": \"lots\"}\n}", 2, 14, "must be a whole number"},
		{"bad_enum", "{\"network\": true,\n \"fsMode\": \"wide\"}", 2, 2, `fsMode is "wide"`},
		{"out_of_range", "{\n\"limits\": {\n  \"pids\": 3}}", 3, 3, "limits.pids is 3"},
		{"truncated", "{\"fsMode\": \"strict\"", 1, 20, "ends before"},
		{"two_objects", "{}\n{}", 2, 1, "one JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(projectPath, []byte(c.text))
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want an *Error", err, err)
			}
			if fe.Line != c.line || fe.Column != c.col || !strings.Contains(fe.Msg, c.says) {
				t.Errorf("got %d:%d %q, want %d:%d with %q", fe.Line, fe.Column, fe.Msg, c.line, c.col, c.says)
			}
			if !strings.HasPrefix(err.Error(), projectPath+":") {
				t.Errorf("error %q does not start with the file", err)
			}
		})
	}
}

// TestMergeNarrowsHTTPRules: a project's rule for a host the owner has
// rules for replaces them when it allows nothing more (a method and a
// path below theirs), and is ignored with a note when it would allow
// another method, another path or any method; a rule for a host the
// owner does not limit is taken as it is.
func TestMergeNarrowsHTTPRules(t *testing.T) {
	t.Parallel()
	owner := mustParse(t, ownerPath, `{"httpRules":[{"host":"api.example.org","methods":["GET","POST"],"paths":["/v1/"]},{"host":"files.example.org","paths":["/pub/**"]}]}`)
	cases := []struct {
		name, project string
		want          []string // the effective rules, one "host methods paths" each
		notes         int
	}{
		{"narrower", `{"httpRules":[{"host":"api.example.org","methods":["GET"],"paths":["/v1/items"]}]}`,
			[]string{"files.example.org [] [/pub/**]", "api.example.org [GET] [/v1/items]"}, 0},
		{"a glob below the owner's", `{"httpRules":[{"host":"files.example.org","methods":["GET"],"paths":["/pub/*/x"]}]}`,
			[]string{"api.example.org [GET POST] [/v1/]", "files.example.org [GET] [/pub/*/x]"}, 0},
		{"another method", `{"httpRules":[{"host":"api.example.org","methods":["DELETE"],"paths":["/v1/items"]}]}`,
			[]string{"api.example.org [GET POST] [/v1/]", "files.example.org [] [/pub/**]"}, 1},
		{"another path", `{"httpRules":[{"host":"api.example.org","methods":["GET"],"paths":["/admin"]}]}`,
			[]string{"api.example.org [GET POST] [/v1/]", "files.example.org [] [/pub/**]"}, 1},
		{"any method", `{"httpRules":[{"host":"api.example.org","paths":["/v1/items"]}]}`,
			[]string{"api.example.org [GET POST] [/v1/]", "files.example.org [] [/pub/**]"}, 1},
		{"a host the owner does not limit", `{"httpRules":[{"host":"other.example.org","methods":["GET"]}]}`,
			[]string{"api.example.org [GET POST] [/v1/]", "files.example.org [] [/pub/**]", "other.example.org [GET] []"}, 0},
	}
	for _, c := range cases {
		e := Merge(Layer{ownerPath, owner}, &Layer{projectPath, mustParse(t, projectPath, c.project)})
		var got []string
		for _, r := range e.File.HTTPRules {
			got = append(got, strings.Join([]string{r.Host, "[" + strings.Join(r.Methods, " ") + "]", "[" + strings.Join(r.Paths, " ") + "]"}, " "))
		}
		if !slices.Equal(got, c.want) || len(e.Notes) != c.notes {
			t.Errorf("%s: rules %q notes %q; want %q and %d notes", c.name, got, e.Notes, c.want, c.notes)
		}
	}
}
