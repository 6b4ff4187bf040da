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

// The settings' engines are checked when saved: one way to reach each,
// TLS that is verified, ssh refused with the reason, names that are
// names; a refused list changes nothing.
func TestEngineSettingsAreChecked(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	dir := testDir(t)
	ca := filepath.Join(dir, "ca.pem")
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for _, c := range []struct {
		name  string
		en    EngineSettings
		field string
		says  string
	}{
		{"ssh_refused", EngineSettings{Name: "big", Host: "ssh://me@big"}, "engines[0].host", "uses ssh, which SenClaw does not support yet"},
		{"tcp_without_tls", EngineSettings{Name: "big", Host: "tcp://10.0.0.9:2375"}, "engines[0].caCert", "without TLS"},
		{"bad_name", EngineSettings{Name: "Big Box", Host: "unix:///x.sock"}, "engines[0].name", "lower-case"},
		{"local_name", EngineSettings{Name: "local", Host: "unix:///x.sock"}, "engines[0].name", "this machine's"},
		{"both_ways", EngineSettings{Name: "big", Host: "unix:///x.sock", Context: "c"}, "engines[0].host", "not both"},
		{"neither", EngineSettings{Name: "big"}, "engines[0].host", "either"},
		{"missing_ca", EngineSettings{Name: "big", Host: "tcp://h:2376", CACert: filepath.Join(dir, "gone.pem")}, "engines[0].caCert", "cannot be read"},
		{"relative_ca", EngineSettings{Name: "big", Host: "tcp://h:2376", CACert: "ca.pem"}, "engines[0].caCert", "absolute"},
		{"cert_without_key", EngineSettings{Name: "big", Host: "tcp://h:2376", CACert: ca, Cert: cert}, "engines[0].cert", "go together"},
		{"unknown_context", EngineSettings{Name: "big", Context: "nowhere"}, "engines[0].context", `docker context "nowhere"`},
		{"other_scheme", EngineSettings{Name: "big", Host: "http://h:2375"}, "engines[0].host", "give tcp://"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := e.Settings()
			s.Engines = []EngineSettings{c.en}
			_, err := e.SetSettings(s)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want %s saying %q", err, c.field, c.says)
			}
			if len(e.Settings().Engines) != 0 {
				t.Fatal("a refused engine was saved")
			}
		})
	}
	s := e.Settings()
	s.Engines = []EngineSettings{{Name: "big", Host: "tcp://h:2376", CACert: ca, Cert: cert, Key: key}, {Name: "fwd", Host: "unix:///run/big.sock"}}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	if names := e.engineNames(); strings.Join(names, ",") != "local,big,fwd" {
		t.Fatalf("engines: %v", names)
	}
	// A sandbox lives on big: big stays.
	sb, err := e.Create(context.Background(), SandboxConfig{Engine: ptr("big")})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Backend != "docker" || sb.Workspace != "/work" || sb.OwnWorkspace {
		t.Fatalf("a sandbox on big: %+v", sb)
	}
	s.Engines = s.Engines[1:]
	if _, err := e.SetSettings(s); err == nil || !strings.Contains(err.Error(), sb.ID) {
		t.Fatalf("removing an engine a sandbox lives on: %v", err)
	}
}

// A sandbox names an engine of the settings, on create only, with a
// container backend; a copy of a folder is for a remote engine only.
func TestSandboxEnginesAreChecked(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	s := e.Settings()
	s.Engines = []EngineSettings{{Name: "far", Host: "unix:///nonexistent/far.sock"}}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src := testDir(t)
	var fe *FieldError
	for _, c := range []struct {
		name  string
		cfg   SandboxConfig
		field string
	}{
		{"unknown_engine", SandboxConfig{Engine: ptr("near")}, "engine"},
		{"not_a_container_backend", SandboxConfig{Engine: ptr("far"), Backend: ptr("direct")}, "engine"},
		{"bind_on_remote", SandboxConfig{Engine: ptr("far"), Mounts: []backends.Mount{{Source: src, Target: "m"}}}, "mounts[0].copy"},
		{"copy_here", SandboxConfig{Mounts: []backends.Mount{{Source: src, Target: "m", Copy: true}}}, "mounts[0].copy"},
		{"project_dir_on_remote", SandboxConfig{Engine: ptr("far"), ProjectDir: ptr(src)}, "projectDir"},
	} {
		if _, err := e.Create(ctx, c.cfg); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v, want the field %s", c.name, err, c.field)
		}
	}
	local, err := e.Create(ctx, SandboxConfig{Engine: ptr("local")})
	if err != nil || local.Engine != "" {
		t.Fatalf("engine local: %+v %v", local, err)
	}
	sb, err := e.Create(ctx, SandboxConfig{Engine: ptr("far")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(sb.ID, SandboxConfig{Engine: ptr("local")}); !errors.As(err, &fe) || fe.Field != "engine" {
		t.Fatalf("moving a sandbox to another engine: %v", err)
	}
	// Its engine does not answer: a run is refused with the reason, and
	// the sandbox shows unreachable, kept.
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "true"})
	if !IsRefused(err) || !strings.Contains(err.Error(), "engine far, which is unreachable") || !strings.HasPrefix(res.Record.Isolation, "refused: ") {
		t.Fatalf("a run on an engine that does not answer: %v", err)
	}
	got, err := e.Get(sb.ID)
	if err != nil || got.State != StateUnreachable || !strings.Contains(got.LastError, "engine far is unreachable") {
		t.Fatalf("the sandbox: %+v %v", got, err)
	}
	page, err := e.SandboxesPage(ListQuery{Match: "far"})
	if err != nil || page.Total != 1 || page.Sandboxes[0].State != StateUnreachable {
		t.Fatalf("the list of sandboxes on far: %+v %v", page, err)
	}
	var ue *UnreachableError
	if _, err := e.ReadFile(sb.ID, "x", 0, false); !errors.As(err, &ue) {
		t.Fatalf("a file read there: %v", err)
	}
	// Its workspace is /work in its container, not this machine's /work:
	// a write goes there (and waits for the engine), whatever this
	// machine has at that path.
	if _, err := e.WriteFile(sb.ID, ".git/config", []byte("x")); !errors.As(err, &ue) {
		t.Fatalf("a file write there: %v", err)
	}
}
