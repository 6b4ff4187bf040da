package app

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/policyfile"
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
