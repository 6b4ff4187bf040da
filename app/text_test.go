package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// Every stored string that people will see follows one character policy:
// a refusal names the field, quotes the value and says what is allowed,
// on create and update alike, and nothing is stored.
func TestStoredTextFollowsOneCharacterPolicy(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	sb, err := e.Create(context.Background(), directConfig())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		cfg   SandboxConfig
		field string
	}{
		{"name_esc", SandboxConfig{Name: ptr("ok\x1b]0;pwned\x07")}, "name"},
		{"name_bidi_override", SandboxConfig{Name: ptr("txt.\u202egnp")}, "name"},
		{"name_bidi_isolate", SandboxConfig{Name: ptr("a\u2066b")}, "name"},
		{"name_c1_csi", SandboxConfig{Name: ptr("a\u009b31m")}, "name"},
		{"name_nel", SandboxConfig{Name: ptr("a\u0085b")}, "name"},
		{"name_zero_width", SandboxConfig{Name: ptr("a\u200bb")}, "name"},
		{"name_not_utf8", SandboxConfig{Name: ptr("a\xffb")}, "name"},
		{"image_csi", SandboxConfig{Image: ptr("debian\x1b[8m")}, "image"},
		{"image_newline", SandboxConfig{Image: ptr("debian\nx")}, "image"},
		{"image_not_a_reference", SandboxConfig{Image: ptr("Debian:Latest")}, "image"},
		{"image_spaces_inside", SandboxConfig{Image: ptr("debian bookworm")}, "image"},
		{"mount_target_cr", SandboxConfig{Mounts: []backends.Mount{{Source: "/usr/share", Target: "x\ry", ReadOnly: true}}}, "mounts[0].target"},
		{"mount_source_esc", SandboxConfig{Mounts: []backends.Mount{{Source: "/tmp/\x1b[2J"}}}, "mounts[0].source"},
		{"env_key_bidi", SandboxConfig{Env: map[string]string{"A\u202e": "b"}}, "env"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range []string{"create", "update"} {
				var err error
				if op == "create" {
					_, err = e.Create(context.Background(), tc.cfg)
				} else {
					_, err = e.Update(sb.ID, tc.cfg)
				}
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != tc.field {
					t.Fatalf("%s: %v, want a FieldError on %s", op, err, tc.field)
				}
				msg := err.Error()
				if strings.ContainsAny(msg, "\x1b\r\n\u202e\u009b\u0085\u2066\u200b") {
					t.Fatalf("%s: the refusal itself carries the raw value: %q", op, msg)
				}
				if !strings.HasPrefix(msg, tc.field+" \"") {
					t.Errorf("%s: %q does not name the field and quote the value", op, msg)
				}
				if fe.Field != "image" && fe.Field != "env" && !strings.Contains(msg, "allowed are letters") {
					t.Errorf("%s: %q does not say what is allowed", op, msg)
				}
			}
		})
	}
	if all, _ := e.List(); len(all) != 1 {
		t.Fatalf("refused creates stored %d sandboxes", len(all))
	}
	for _, ok := range []string{"Bücher – build #2 (ok)", "文件", "agent:proj"} {
		if _, err := e.Update(sb.ID, SandboxConfig{Name: ptr(ok)}); err != nil {
			t.Errorf("name %q: %v", ok, err)
		}
	}
	for _, ok := range []string{"debian:bookworm-slim", "senclaw-test/busybox:latest", "registry.example.com:5000/team/app@sha256:" + strings.Repeat("a", 64), ""} {
		if _, err := e.Create(context.Background(), SandboxConfig{Image: ptr(ok)}); err != nil {
			t.Errorf("image %q: %v", ok, err)
		}
	}

	// The settings' default image and allowlist, and a run's source.
	s := e.Settings()
	for _, bad := range []func(*Settings){
		func(s *Settings) { s.DefaultImage = "debian\x1b[8m" },
		func(s *Settings) { s.Allowlist = []string{"/tmp/\u202eevil"} },
	} {
		c := s
		bad(&c)
		if _, err := e.SetSettings(c); err == nil {
			t.Errorf("settings %+v accepted", c)
		}
	}
	if _, err := e.Exec(context.Background(), sb.ID, RunRequest{Source: "cli\x1b[8m", Command: "true"}); err == nil || !strings.Contains(err.Error(), "source") {
		t.Errorf("a run with a forged source: %v", err)
	}
}

// An agent shell's sandbox is named after the project dir, which the
// agent chose: the name is stored escaped.
func TestAgentSandboxNameIsPrintable(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	dir := filepath.Join(testDir(t), "proj\x1b]0;pwned\x07\u202e")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := e.agentSandbox(dir, "", e.Policy())
	if err != nil {
		t.Fatal(err)
	}
	if sb.Name != `agent:proj\x1b]0;pwned\a\u202e` {
		t.Errorf("agent sandbox name %q", sb.Name)
	}
}
