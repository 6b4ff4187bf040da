package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/backends"
)

// TestNotesSayWhatTheSandboxGets: a create note is one line that says
// the network as it is (a sandbox with the network off and only a listen
// port says exactly that), the facts by layer are details, and only a
// rule asked for and not enforced is a warning.
func TestNotesSayWhatTheSandboxGets(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	s := e.Settings()
	s.AllowDirect = true
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AddSecret(SecretSpec{Name: "gh", Hosts: []string{"api.github.com"}}, []byte("a-value-of-the-notes-test")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		cfg      SandboxConfig
		want     string // the note, after "sandbox NAME (BACKEND): "
		warnings int
		detail   string
	}{
		{"off", SandboxConfig{Backend: ptr("bwrap")}, "network off", 0, "no route out"},
		{"listen_only", SandboxConfig{Backend: ptr("bwrap"), Listen: []int{8000}}, "network off; listening at 127.0.0.1:8000", 0, "UDP and other non-TCP traffic is not forwarded"},
		{"on", SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true), Loopback: []int{5432}}, "network on: public addresses; this machine's ports 5432", 0, "outbound: any public address on any port"},
		{"http_rules_and_secrets", SandboxConfig{Backend: ptr("bwrap"), Network: ptr(true), Secrets: []string{"gh"},
			AllowHTTP: []backends.HTTPRule{{Host: "api.github.com", Methods: []string{"GET"}}, {Host: "api.github.com", Methods: []string{"HEAD"}}}},
			"network on: public addresses; HTTP rules for api.github.com; secrets gh as placeholders", 0, "outbound: any public address on any port"},
		{"connect", SandboxConfig{Backend: ptr("bwrap"), Connect: []int{443}}, "network on: public addresses on ports 443", 0, "outbound: public addresses on ports [443] only"},
		{"direct", SandboxConfig{Backend: ptr("direct"), Network: ptr(true)}, "no isolation: the network rules are advisory", 2, "advisory only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Name = ptr("n-" + strings.ReplaceAll(tc.name, "_", "-"))
			sb, err := e.Create(context.Background(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := e.CreateNotes(context.Background(), sb)
			if want := "sandbox " + *tc.cfg.Name + " (" + *tc.cfg.Backend + "): " + tc.want; n.Note != want {
				t.Errorf("note %q, want %q", n.Note, want)
			}
			if strings.ContainsAny(n.Note, "\n") || len(n.Note) > 160 {
				t.Errorf("the note is not one short line: %q", n.Note)
			}
			if len(n.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", n.Warnings, tc.warnings)
			}
			if !slices.ContainsFunc(n.Details, func(d string) bool { return strings.Contains(d, tc.detail) }) {
				t.Errorf("details %q lack %q", n.Details, tc.detail)
			}
			if up := e.ChangeNotes(context.Background(), sb); !strings.HasPrefix(up.Note, "sandbox "+*tc.cfg.Name) || !strings.Contains(up.Note, "takes effect on the next run") {
				t.Errorf("change note %q", up.Note)
			}
		})
	}
}

// TestANetworkedRunHasNoWarning: a bwrap run with the network on gets
// what it asked for; that UDP is not forwarded is a limit that holds, not
// a rule that was not enforced.
func TestANetworkedRunHasNoWarning(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	res, err := e.RunOnce(context.Background(), SandboxConfig{Network: ptr(true)}, RunRequest{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	n := RunNotes(&res.Record)
	if len(res.Record.Missing) != 0 || n.Note != "" || len(n.Warnings) != 0 {
		t.Errorf("missing %q, notes %+v", res.Record.Missing, n)
	}
	if !slices.ContainsFunc(n.Details, func(d string) bool { return strings.Contains(d, "UDP") }) || !res.Record.Network {
		t.Errorf("the details do not say that UDP is not forwarded: %q (network %v)", n.Details, res.Record.Network)
	}
}

// TestRunNotes: one rule not enforced is named in the note; several are
// counted and named by subject.
func TestRunNotes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		missing []string
		want    string
	}{
		{nil, ""},
		{[]string{"cpu 2: not enforced (no writable cgroup)"}, "not enforced: cpu 2: not enforced (no writable cgroup)"},
		{[]string{"cpu 2: no cgroup", "swap: not limited"}, "2 rules were not enforced (cpu 2, swap); see the warnings"},
	}
	for _, tc := range cases {
		n := RunNotes(&RunRecord{Missing: tc.missing})
		if n.Note != tc.want || len(n.Warnings) != len(tc.missing) || n.Details == nil {
			t.Errorf("RunNotes(%q) = %+v, want note %q", tc.missing, n, tc.want)
		}
	}
}

// TestADirectSandboxsNotesSayWhatHostExecGives: the notes of a sandbox
// on the direct backend say, for a principal other than the owner, what
// the tenant host policy makes of its runs there: confined by Landlock
// under warn (the network and fs rules are Landlock's), refused under
// deny. The owner's notes are as before.
func TestADirectSandboxsNotesSayWhatHostExecGives(t *testing.T) {
	t.Parallel()
	e := hostExecEngine(t)
	agent := principal.With(context.Background(), principal.Principal{Kind: principal.Agent, Name: "bot"})
	sb, err := e.Create(agent, SandboxConfig{Backend: ptr("direct"), Name: ptr("d")})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.CreateNotes(context.Background(), sb); n.Note != "sandbox d (direct): no isolation: the network rules are advisory" {
		t.Errorf("the owner's note of a direct sandbox: %q", n.Note)
	}
	n := e.CreateNotes(agent, sb)
	if n.Note != "sandbox d (direct: landlock (host exec)): network off" || len(n.Warnings) != 0 ||
		!strings.Contains(strings.Join(n.Details, "\n"), "confined by Landlock") {
		t.Errorf("warn, the agent's notes of a direct sandbox: %+v", n)
	}
	if f := e.FsModeNotes(agent, sb); !strings.Contains(f.Note, "confined by Landlock") {
		t.Errorf("warn, the agent's fs mode note of a direct sandbox: %q", f.Note)
	}
	s := e.Settings()
	s.Exec.TenantHostPolicy = HostPolicyDeny
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	n = e.ChangeNotes(agent, sb)
	if !strings.Contains(n.Note, "your runs here are refused") || !strings.Contains(strings.Join(n.Warnings, "\n"), "deny keeps host exec for the owner") {
		t.Errorf("deny, the agent's notes of a direct sandbox: %+v", n)
	}
}
