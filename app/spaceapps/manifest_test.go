package spaceapps

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
)

// TestBadManifestsNameTheField: unknown fields (at any depth) and bad
// values are refused with the field's full path, and the message says
// what is allowed.
func TestBadManifestsNameTheField(t *testing.T) {
	t.Parallel()
	rt := func(extra string) string {
		return `{"id": "a", "name": "A", "runtime": {"start": "true"` + extra + `}}`
	}
	sb := func(block string) string {
		return `{"id": "a", "name": "A", "runtime": {"start": "true"}, "sandbox": {` + block + `}}`
	}
	cases := []struct {
		name, doc, field, says string
	}{
		{"unknown_top", `{"id": "a", "name": "A", "runtime": {"start": "true"}, "colour": "red"}`, "colour", "the fields are"},
		{"unknown_nested", rt(`, "prot": 80`), "runtime.prot", "port"},
		{"unknown_in_list", sb(`"folders": [{"path": "/srv/x", "mode": "ro"}]`), "sandbox.folders[0].mode", "readOnly"},
		{"wrong_type", rt(`, "port": "8000"`), "runtime.port", "whole number"},
		{"not_an_object", `[1]`, ManifestFile, "object"},
		{"empty", ``, ManifestFile, "empty"},
		{"bad_id", `{"id": "My App", "name": "A", "runtime": {"start": "true"}}`, "id", "slug"},
		{"control_in_name", `{"id": "a", "name": "A\u001b[31m", "runtime": {"start": "true"}}`, "name", "control"},
		{"bidi_in_name", `{"id": "a", "name": "A\u202egnp.exe", "runtime": {"start": "true"}}`, "name", "bidirectional"},
		{"no_start", `{"id": "a", "name": "A", "runtime": {}}`, "runtime.start", "empty"},
		{"privileged_port", rt(`, "port": 80`), "runtime.port", "privileged"},
		{"proxy_port", rt(`, "port": 3128`), "runtime.port", "forwarder"},
		{"health_path", rt(`, "healthPath": "health"`), "runtime.healthPath", "starting with /"},
		{"start_timeout", rt(`, "startTimeoutSec": 601`), "runtime.startTimeoutSec", "between 1 and 600"},
		{"stop_timeout", rt(`, "stopTimeoutSec": -1`), "runtime.stopTimeoutSec", "between 1 and 300"},
		{"restart", rt(`, "restart": "unless-stopped"`), "runtime.restart", "on-failure, always or never"},
		{"bin", `{"id": "a", "name": "A", "runtime": {"start": "true"}, "requires": {"bin": ["ok", "../x"]}}`, "requires.bin[1]", "program name"},
		{"python", `{"id": "a", "name": "A", "runtime": {"start": "true"}, "requires": {"python": "latest"}}`, "requires.python", "least version"},
		{"env", `{"id": "a", "name": "A", "runtime": {"start": "true"}, "requires": {"env": ["1X"]}}`, "requires.env[0]", "variable name"},
		{"read_mode", sb(`"readMode": "everything"`), "sandbox.readMode", "strict, allowlist or open"},
		{"network", sb(`"network": "some"`), "sandbox.network", "all"},
		{"host_ip", sb(`"network": "hosts", "hosts": ["example.org", "10.0.0.1"]`), "sandbox.hosts[1]", "address"},
		{"host_localhost", sb(`"hosts": ["http://localhost:8080/x"]`), "sandbox.hosts[0]", "this machine"},
		{"host_metadata", sb(`"hosts": ["metadata.google.internal"]`), "sandbox.hosts[0]", "metadata"},
		{"host_wildcard", sb(`"hosts": ["a.*.example.org"]`), "sandbox.hosts[0]", "leading"},
		{"loopback", sb(`"loopback": [0]`), "sandbox.loopback", "between 1 and 65535"},
		{"folder_relative", sb(`"folders": [{"path": "data"}]`), "sandbox.folders[0].path", "absolute"},
		{"force_disabled", sb(`"force": true, "enabled": false`), "sandbox.enabled", "force"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseManifest([]byte(tc.doc))
			var fe *app.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err %v, want a field error", err)
			}
			if fe.Field != tc.field || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("field %q, message %q; want %q saying %q", fe.Field, err, tc.field, tc.says)
			}
		})
	}
}

// TestHostsAreNormalised: a pasted URL becomes its host, case and
// trailing dots go, duplicates go, wildcards stay in front.
func TestHostsAreNormalised(t *testing.T) {
	t.Parallel()
	got, err := normalizeHosts("hosts", []string{"https://Example.ORG/path?q=1", "example.org.", "*.PyPI.org", "files.pythonhosted.org:443", "api.github.com/repos"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"*.pypi.org", "api.github.com", "example.org", "files.pythonhosted.org"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	many := make([]string, MaxHosts+1)
	for i := range many {
		many[i] = "h" + strings.Repeat("x", i%7) + ".example"
	}
	if _, err := normalizeHosts("hosts", many); err == nil {
		t.Fatalf("%d hosts were accepted", len(many))
	}
}

// TestForceAndItsRemoval: a forced block is enabled whatever it says; a
// block without force keeps what is stored (apply is only called for a
// first registration or a forced one).
func TestForceAndItsRemoval(t *testing.T) {
	t.Parallel()
	m, err := ParseManifest([]byte(`{"id": "a", "name": "A", "runtime": {"start": "true"}, "sandbox": {"force": true, "readMode": "strict", "network": "off"}}`))
	if err != nil {
		t.Fatal(err)
	}
	user := defaultSettings()
	user.ReadMode, user.Network = "open", "all"
	forced := applyManifest(user, m.Sandbox)
	if !forced.Enabled || forced.ReadMode != "strict" || forced.Network != "off" {
		t.Fatalf("forced settings %+v", forced)
	}
}
