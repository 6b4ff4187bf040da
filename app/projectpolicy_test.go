package app

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
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
