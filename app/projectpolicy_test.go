package app

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/netproxy"
	"github.com/senclaw/sandbox/app/policyfile"
	"github.com/senclaw/sandbox/backends"
)

// TestProjectPolicyConnectNoneIsNoEgress: an empty connect list is any
// port to the proxy (with the network on), so a connect list that the
// policy leaves empty (the owner's [], a project's [], or a project's
// ports the owner does not allow) must leave no egress, never any port.
func TestProjectPolicyConnectNoneIsNoEgress(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	owner := filepath.Join(e.opts.ConfigDir, OwnerPolicyFile)
	for _, c := range []struct {
		name, owner, project string
		asked                []int
	}{
		{"project_other_port", `{"network": true, "ports": {"connect": [443]}}`, `{"ports": {"connect": [22]}}`, nil},
		{"project_empty", `{"network": true, "ports": {"connect": [443]}}`, `{"ports": {"connect": []}}`, nil},
		{"owner_empty", `{"network": true, "ports": {"connect": []}}`, `{"fsMode": "strict"}`, nil},
		{"asked_other_port", `{"network": true, "ports": {"connect": [443]}}`, `{"fsMode": "strict"}`, []int{22}},
	} {
		writePolicy(t, owner, c.owner)
		if _, err := e.OwnerPolicy(); err != nil {
			t.Fatal(err)
		}
		project := testDir(t)
		writePolicy(t, filepath.Join(project, ProjectPolicyFile), c.project)
		cfg := SandboxConfig{ProjectDir: &project}
		if c.asked != nil {
			cfg.Connect = c.asked
		}
		sb, err := e.newSandbox(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sb.Network = true
		notes, err := e.applyProjectPolicy(&sb, nil, false, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if sb.Network && len(sb.Ports.Connect) == 0 || slices.ContainsFunc(sb.Ports.Connect, func(p int) bool { return p != 443 }) {
			t.Errorf("%s: network %v, connect %v: egress to any port (notes %q)", c.name, sb.Network, sb.Ports.Connect, notes)
		}
		_ = os.Remove(owner)
	}
}

// TestPolicyFileHTTPRuleTheProxyCannotReadIsBroken: a rule whose host
// the proxy cannot match (a URL, a path) limits nothing there: in the
// owner's file it would leave its host open, so it refuses, with the
// line and column, like any broken file; a project's too.
func TestPolicyFileHTTPRuleTheProxyCannotReadIsBroken(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	owner := filepath.Join(e.opts.ConfigDir, OwnerPolicyFile)
	writePolicy(t, owner, "{\"network\": true,\n \"httpRules\": [{\"host\": \"https://api.example.org\", \"methods\": [\"GET\"]}]}")
	_, err := e.OwnerPolicy()
	var pe *policyfile.Error
	if !errors.As(err, &pe) || pe.Line != 2 || !strings.Contains(pe.Msg, "httpRules[0].host") {
		t.Fatalf("owner's file with a URL for a host: %v", err)
	}
	writePolicy(t, owner, `{"network": true, "httpRules": [{"host": "API.example.org.", "methods": ["get"]}]}`)
	l, err := e.OwnerPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if r := l.File.HTTPRules; len(r) != 1 || r[0].Host != "api.example.org" || !slices.Equal(r[0].Methods, []string{"GET"}) {
		t.Fatalf("rules %+v, want them as the proxy spells them", r)
	}
	project := testDir(t)
	writePolicy(t, filepath.Join(project, ProjectPolicyFile), `{"httpRules": [{"host": "api.example.org", "paths": ["v1"]}]}`)
	sb, err := e.newSandbox(SandboxConfig{ProjectDir: &project})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.applyProjectPolicy(&sb, nil, false, SandboxConfig{}); !errors.As(err, &pe) || !strings.Contains(pe.Msg, "httpRules[0].paths[0]") {
		t.Fatalf("project's rule with a path the proxy cannot read: %v", err)
	}
}

// TestProjectPolicyHTTPRulesBoundTheRequest: the owner's HTTP rules are
// the bounds of a run in a project; a --here request's own rule for the
// same host, or one an agent saved on the agent shell's sandbox, may
// narrow them but not take their place with more.
func TestProjectPolicyHTTPRulesBoundTheRequest(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	agentShellOn(t, e)
	writePolicy(t, filepath.Join(e.opts.ConfigDir, OwnerPolicyFile), `{"network": true, "httpRules": [{"host": "api.example.org", "methods": ["GET"], "paths": ["/v1/"]}]}`)
	if _, err := e.OwnerPolicy(); err != nil {
		t.Fatal(err)
	}
	project := testDir(t)
	wide := []backends.HTTPRule{{Host: "api.example.org", Methods: []string{"GET", "POST"}}}
	narrow := []backends.HTTPRule{{Host: "api.example.org", Methods: []string{"GET"}, Paths: []string{"/v1/items"}}}
	allows := func(sb *Sandbox, method, path string) bool {
		return netproxy.HTTPAllows(sb.Ports.AllowHTTP, "api.example.org", 443, method, path)
	}

	// senclaw run --here with --allow-http of its own.
	cfg := SandboxConfig{ProjectDir: &project, AllowHTTP: wide}
	sb, err := e.newSandbox(cfg)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := e.applyProjectPolicy(&sb, nil, false, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if allows(&sb, "POST", "/v1/x") || allows(&sb, "GET", "/admin") || !allows(&sb, "GET", "/v1/x") {
		t.Errorf("--here: rules %+v (notes %q): the request's rule took the owner's place", sb.Ports.AllowHTTP, notes)
	}
	cfg.AllowHTTP = narrow
	if sb, err = e.newSandbox(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := e.applyProjectPolicy(&sb, nil, false, cfg); err != nil {
		t.Fatal(err)
	}
	if allows(&sb, "GET", "/v1/other") || !allows(&sb, "GET", "/v1/items/1") {
		t.Errorf("--here: rules %+v: a narrower rule of the request's should hold", sb.Ports.AllowHTTP)
	}

	// The agent shell's sandbox, changed by an agent (sbx_update).
	agent := e.giveToAgent(t, project)
	if _, err := e.Update(agent.ID, SandboxConfig{AllowHTTP: wide}); err != nil {
		t.Fatal(err)
	}
	asb, err := e.agentSandbox(project, "", e.Policy())
	if err != nil {
		t.Fatal(err)
	}
	bounded := *asb
	if _, err := e.applyProjectPolicy(&bounded, nil, true, SandboxConfig{}); err != nil {
		t.Fatal(err)
	}
	if allows(&bounded, "POST", "/v1/x") {
		t.Errorf("agent shell: rules %+v: the agent's saved rule took the owner's place", bounded.Ports.AllowHTTP)
	}
}

// TestPolicyApplyFollowsNoLink: Apply (and learn's --write) writes the
// project's file only inside the project: a .senclaw or policy.json that
// is a link (planted by whatever writes the project) is refused, and
// nothing lands where it leads.
func TestPolicyApplyFollowsNoLink(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	for _, c := range []struct {
		name  string
		plant func(project, elsewhere string) error
	}{
		{"dir_link", func(project, elsewhere string) error {
			return os.Symlink(elsewhere, filepath.Join(project, ".senclaw"))
		}},
		{"file_link", func(project, elsewhere string) error {
			if err := os.Mkdir(filepath.Join(project, ".senclaw"), 0o755); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(elsewhere, "policy.json"), filepath.Join(project, ProjectPolicyFile))
		}},
	} {
		project, elsewhere := testDir(t), testDir(t)
		must(t, c.plant(project, elsewhere))
		_, err := e.PolicyApply(context.Background(), PolicyApplyRequest{ProjectDir: project, Policy: `{"fsMode": "strict"}`})
		if err == nil {
			t.Errorf("%s: applied through a link", c.name)
		}
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
			t.Errorf("%s: wrote %v where the link leads", c.name, entries)
		}
	}
}

// TestLearnRunCannotWriteThePolicy: a learn run's command (its sandbox is
// the widest the owner allows) can neither change the project's policy
// file nor make one, nor plant a link where --write saves the proposal.
func TestLearnRunCannotWriteThePolicy(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is missing (tracing needs it)")
		}
		t.Skip("strace is missing")
	}
	e := bwrapEngine(t)
	project, bare := testDir(t), testDir(t)
	must(t, os.Chmod(project, 0o777))
	must(t, os.Chmod(bare, 0o777))
	path := filepath.Join(project, ProjectPolicyFile)
	writePolicy(t, path, `{"network": false}`)
	cmd := `echo '{}' > .senclaw/policy.json; rm -rf .senclaw; mv .senclaw x; ln -s /tmp .senclaw/link; mkdir -p .senclaw && echo '{}' > .senclaw/policy.json; true`
	if _, err := e.PolicyLearn(context.Background(), PolicyLearnRequest{ProjectDir: project, Command: cmd}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != `{"network": false}` {
		t.Fatalf("the learn run changed the policy file: %q %v", data, err)
	}
	if _, err := e.PolicyLearn(context.Background(), PolicyLearnRequest{ProjectDir: bare, Command: `mkdir -p .senclaw && echo '{}' > .senclaw/policy.json; ln -s /etc .senclaw; true`}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(bare, ".senclaw")); err == nil {
		t.Fatalf("the learn run made .senclaw (%v)", fi.Mode())
	}
}

// TestTheAgentShellCheckJudgesTheStoredSandbox: policy check
// --agent-shell and the agent hooks' check judge the project's agent
// sandbox as the agent shell would run in it (what an agent changed with
// sbx_update stays), with the policy's fs mode, network and ports, not a
// fresh sandbox with other limits and mounts; they store nothing.
func TestTheAgentShellCheckJudgesTheStoredSandbox(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	agentShellOn(t, e)
	project := testDir(t)
	data := testDir(t)
	if v, err := e.agentSandboxView(project, "", e.Policy()); err != nil || v.ID != "" || v.CPUs != 4 {
		t.Fatalf("before any run: %+v %v; want the sandbox the agent shell would make (no id, 4 CPUs)", v, err)
	}
	if n := countSandboxes(t, e); n != 0 {
		t.Fatalf("the check stored %d sandboxes", n)
	}
	agent := e.giveToAgent(t, project)
	if _, err := e.Update(agent.ID, SandboxConfig{CPUs: ptr(1.0), Mounts: []backends.Mount{{Source: data, Target: "data", ReadOnly: true}}}); err != nil {
		t.Fatal(err)
	}
	v, err := e.agentSandboxView(project, "", e.Policy())
	if err != nil {
		t.Fatal(err)
	}
	if v.ID != agent.ID || v.CPUs != 1 || len(v.Mounts) != 1 || v.Mounts[0].Target != "data" {
		t.Errorf("the check judged %+v, want the stored agent sandbox %s with 1 CPU and its data mount", v, agent.ID)
	}
	if v.FsMode != e.Policy().ExecFsMode || v.Network != e.Policy().ExecNetwork {
		t.Errorf("the check's sandbox has fs mode %s, network %v; want the policy's", v.FsMode, v.Network)
	}
	res, err := e.PolicyCheck(context.Background(), PolicyCheckRequest{AgentShell: true, ProjectDir: project, Command: "cat data/x"})
	if err != nil || !res.Allowed {
		t.Fatalf("policy check --agent-shell: %+v %v", res, err)
	}
	if n := countSandboxes(t, e); n != 1 {
		t.Errorf("after the checks %d sandboxes are stored, want the agent's one", n)
	}
}

func countSandboxes(t *testing.T, e *Engine) int {
	t.Helper()
	n := 0
	if err := e.store.EachSandbox(func([]byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}
