package seatbelt

import (
	"flag"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/seatbelt/sbeval"
	"github.com/senclaw/sandbox/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const (
	testHome = "/Users/ann"
	testData = "/Users/ann/.local/share/senclaw"
	testWS   = testData + "/workspaces/s1"
)

// testHost is a Mac where /var and /tmp are links into /private, the
// mounts' targets are linked to their sources, and /Volumes/data is a
// repository.
func testHost(links map[string]string) Host {
	all := map[string]string{"/var": "/private/var", "/tmp": "/private/tmp", "/etc": "/private/etc"}
	for k, v := range links {
		all[k] = v
	}
	return Host{
		Home:     testHome,
		CacheDir: testHome + "/Library/Caches",
		Prefixes: []string{testHome + "/.pyenv/versions/3.12.1"},
		Resolve:  linkResolver(all),
		GitRepo:  func(dir string) bool { return dir == "/Volumes/data" },
	}
}

// linkResolver resolves p through links (path -> absolute target), the
// longest first, as the disk would.
func linkResolver(links map[string]string) func(string) string {
	keys := make([]string, 0, len(links))
	for k := range links {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	return func(p string) string {
		for range 16 {
			changed := false
			for _, k := range keys {
				if p == k || strings.HasPrefix(p, k+"/") {
					p = links[k] + strings.TrimPrefix(p, k)
					changed = true
					break
				}
			}
			if !changed {
				break
			}
		}
		return p
	}
}

func baseSpec(mode backends.FsMode) *backends.Spec {
	return &backends.Spec{
		RunID:     "r1",
		Workspace: testWS,
		Argv:      []string{"python3", "-c", "print('hi')"},
		FsMode:    mode,
		ReadPaths: []string{"/srv/shared", "/Users/ann/datasets"},
		Hidden:    []string{testData, testHome + "/.config/senclaw", "/var/run/docker.sock"},
	}
}

type profileCase struct {
	name string
	spec *backends.Spec
	host Host
}

// profileCases are {strict, allowlist, open} x network off/on x {connect,
// listen, loopback}, x {no mounts, ro and rw mounts, a ro mount inside a
// rw one}, and hostile paths.
func profileCases() []profileCase {
	var cases []profileCase
	mountLinks := map[string]string{
		testWS + "/data":   "/Volumes/data",
		testWS + "/models": "/Volumes/data/models",
		testWS + "/ref":    "/Volumes/ref",
	}
	for _, mode := range backends.FsModes {
		m := string(mode)
		add := func(name string, edit func(*backends.Spec), host Host) {
			s := baseSpec(mode)
			edit(s)
			cases = append(cases, profileCase{m + "_" + name, s, host})
		}
		plain := testHost(nil)
		add("network_off", func(*backends.Spec) {}, plain)
		add("network_on", func(s *backends.Spec) { s.Network = true }, plain)
		add("connect", func(s *backends.Spec) { s.Ports.Connect = []int{443, 8443} }, plain)
		add("listen", func(s *backends.Spec) { s.Ports.Listen = []int{8000} }, plain)
		add("loopback", func(s *backends.Spec) { s.Network = true; s.Ports.Loopback = []int{5432} }, plain)
		add("mounts_ro_rw", func(s *backends.Spec) {
			s.Mounts = []backends.Mount{{Source: "/Volumes/data", Target: "data"}, {Source: "/Volumes/ref", Target: "ref", ReadOnly: true}}
		}, testHost(mountLinks))
		add("mount_ro_in_rw", func(s *backends.Spec) {
			s.Mounts = []backends.Mount{{Source: "/Volumes/data", Target: "data"}, {Source: "/Volumes/data/models", Target: "models", ReadOnly: true}}
		}, testHost(mountLinks))
		hostile := "/Users/ann/we\"ird) (allow default)\n\u00e9"
		add("hostile_paths", func(s *backends.Spec) {
			s.Workspace = hostile + "/ws"
			s.Hidden = []string{testData}
			s.Mounts = []backends.Mount{{Source: "/Volumes/" + `x")(allow file-write*`, Target: "m"}}
			s.ReadPaths = []string{"/srv/\"; (allow network*)"}
		}, testHost(map[string]string{hostile + "/ws/m": "/Volumes/" + `x")(allow file-write*`}))
	}
	domains := baseSpec(backends.FsStrict)
	domains.Network = true
	domains.Ports.Domains = []string{"pypi.org"}
	masked := baseSpec(backends.FsOpen)
	masked.Masked = []string{"/usr/bin/python3", "/opt/homebrew/bin/node"}
	tmp := baseSpec(backends.FsStrict)
	th := testHost(nil)
	th.TempDir = "/var/folders/xy/abc/T/senclaw-r1"
	// An agent's project: its agents' and git's files are denied writes,
	// whether they exist or not.
	project := baseSpec(backends.FsStrict)
	project.Workspace = "/Users/ann/code/app"
	project.Protected = []string{"/Users/ann/code/app/.claude", "/Users/ann/code/app/.git/config", "/Users/ann/code/app/.git/hooks"}
	cases = append(cases,
		profileCase{"strict_project_protected", project, testHost(nil)},
		profileCase{"strict_domains_only", domains, testHost(nil)},
		profileCase{"open_masked_interpreters", masked, testHost(nil)},
		profileCase{"strict_private_tmpdir", tmp, th},
	)
	return cases
}

// render is the golden form: the profile, then the parameters.
func render(text string, params []Param) string {
	var b strings.Builder
	b.WriteString(text)
	b.WriteString(";; parameters\n")
	for _, p := range params {
		b.WriteString(";; -D " + p.Key + "=" + strings.ReplaceAll(p.Value, "\n", `\n`) + "\n")
	}
	return b.String()
}

func paramMap(params []Param) map[string]string {
	m := map[string]string{}
	for _, p := range params {
		m[p.Key] = p.Value
	}
	return m
}

func TestProfileGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range profileCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text, params, err := Profile(tc.spec, tc.host)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", tc.name+".golden"), render(text, params), *update)
		})
	}
}

func TestProfileStructure(t *testing.T) {
	t.Parallel()
	for _, tc := range profileCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text, params, err := Profile(tc.spec, tc.host)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range sbeval.Check(text, paramMap(params)) {
				t.Error(e)
			}
			for _, bad := range []string{"(allow default)", "(local ip", "/Users/ann", "/Volumes"} {
				if strings.Contains(text, bad) {
					t.Errorf("profile contains %q", bad)
				}
			}
		})
	}
}

// TestCheckerCatches makes sure the structure checker fails on the
// mistakes it is there for.
func TestCheckerCatches(t *testing.T) {
	t.Parallel()
	text, params, err := Profile(baseSpec(backends.FsOpen), testHost(nil))
	if err != nil {
		t.Fatal(err)
	}
	pm := paramMap(params)
	for _, tc := range []struct{ name, text, want string }{
		{"unbalanced", text + "(allow file-read*", "never closed"},
		{"allow_after_secret", text + `(allow file-read* (subpath (param "WORKSPACE")))` + "\n", "after a secret deny"},
		{"outbound_after_loopback_deny", text + `(allow network-outbound (remote tcp "*:443"))` + "\n", "not followed by the loopback deny"},
		{"dns_without_outbound", strings.Replace(text, "; network\n", "; network\n"+dnsRules, 1), "DNS rule with outbound off"},
		{"local_ip_on_outbound", strings.Replace(text, "; network\n", "; network\n"+`(allow network-outbound (local ip "localhost:*"))`+"\n", 1), "(local ...)"},
		{"undefined_param", strings.Replace(text, "; reads\n", "; reads\n"+`(allow file-read* (subpath (param "NOPE")))`+"\n", 1), "not defined"},
		{"long_literal", strings.Replace(text, "; reads\n", "; reads\n"+`(allow file-read* (subpath "/`+strings.Repeat("a", 1100)+`"))`+"\n", 1), "literal of"},
		{"spliced_path", strings.Replace(text, "; reads\n", "; reads\n"+`(allow file-read* (subpath "`+testWS+`"))`+"\n", 1), "spliced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs := sbeval.Check(tc.text, pm)
			found := slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), tc.want) })
			if !found {
				t.Errorf("Check found %v, want an error containing %q", errs, tc.want)
			}
		})
	}
	if errs := sbeval.Check(text, pm); len(errs) != 0 {
		t.Errorf("the unchanged profile has errors: %v", errs)
	}
	missing := maps.Clone(pm)
	delete(missing, "WORKSPACE")
	if errs := sbeval.Check(text, missing); len(errs) == 0 {
		t.Error("a missing parameter went unnoticed")
	}
}

func TestProfileRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*backends.Spec)
		want string
	}{
		{"dotdot_workspace", func(s *backends.Spec) { s.Workspace = testData + "/workspaces/../../x" }, `contains ".."`},
		{"relative_mount", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: "data", Target: "data"}} }, "not an absolute path"},
		{"remapped_mount", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: "/Volumes/data", Target: "data"}} }, "cannot remap paths"},
		{"mount_in_secret", func(s *backends.Spec) {
			s.Mounts = []backends.Mount{{Source: testHome + "/.ssh/keys", Target: "k"}}
		}, "inside the secret folder"},
		{"bad_mode", func(s *backends.Spec) { s.FsMode = "wide" }, "invalid fs mode"},
		{"nul", func(s *backends.Spec) { s.ReadPaths = []string{"/srv/a\x00b"}; s.FsMode = backends.FsAllowlist }, "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := baseSpec(backends.FsStrict)
			tc.edit(s)
			host := testHost(map[string]string{testWS + "/k": testHome + "/.ssh/keys"})
			_, _, err := Profile(s, host)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Profile error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	got := Command("(version 1)", []Param{{"WORKSPACE", "/a b"}, {"HIDE_0", "/x=y"}}, []string{"sh", "-c", "echo hi"})
	want := []string{"/usr/bin/sandbox-exec", "-p", "(version 1)", "-D", "WORKSPACE=/a b", "-D", "HIDE_0=/x=y", "--", "sh", "-c", "echo hi"}
	if !slices.Equal(got, want) {
		t.Errorf("Command = %q, want %q", got, want)
	}
}

func TestNetworkNote(t *testing.T) {
	t.Parallel()
	b := New(Options{})
	for _, tc := range []struct {
		network bool
		rules   backends.PortRules
		want    []string
	}{
		{false, backends.PortRules{}, []string{"outbound: none, and no name resolution", "services: none"}},
		{true, backends.PortRules{Loopback: []int{5432}}, []string{"any TCP port", "private", "ports [5432] on 127.0.0.1"}},
		{false, backends.PortRules{Connect: []int{443}, Listen: []int{8000}}, []string{"ports [443] only", "listen ports [8000]"}},
		{true, backends.PortRules{Domains: []string{"pypi.org"}}, []string{"outbound: none, because domain rules"}},
	} {
		got := b.NetworkNote(tc.network, tc.rules)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("NetworkNote(%v, %+v) = %q, want it to say %q", tc.network, tc.rules, got, w)
			}
		}
	}
}
