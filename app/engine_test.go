package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// testDir makes a directory that a sandbox user can traverse: t.TempDir()
// and its parent are 0700, which a root engine's unprivileged sandbox user
// could not walk through.
func testDir(t testing.TB) string { return testutil.SandboxDir(t, "senclaw-test-") }

type engineOpt func(*Options)

func newTestEngine(t testing.TB, bs []backends.Backend, opts ...engineOpt) *Engine {
	t.Helper()
	root := testDir(t)
	o := Options{
		DataDir:    filepath.Join(root, "data"),
		ConfigDir:  filepath.Join(root, "config"),
		RuntimeDir: filepath.Join(root, "run"),
		HomeDir:    filepath.Join(root, "home"),
		Backends:   bs,
		EUID:       os.Geteuid(),
		Forwarder:  netfwdtest.Path(t),
	}
	for _, f := range opts {
		f(&o)
	}
	for _, d := range []string{o.ConfigDir, o.RuntimeDir, o.HomeDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// directEngine is an engine whose only backend runs code with no barrier,
// with allowDirect on: it exercises the runner's own logic (timeouts,
// output, records) without depending on a sandbox tool.
func directEngine(t testing.TB, opts ...engineOpt) *Engine {
	t.Helper()
	e := newTestEngine(t, []backends.Backend{directBackend(t)}, opts...)
	s := e.Settings()
	s.AllowDirect = true
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	return e
}

// directBackend is the direct backend with this test binary as its
// launcher (TestMain), as main gives it the senclaw executable.
func directBackend(t testing.TB) *direct.Backend {
	return direct.New(direct.Options{Launcher: testutil.Launcher(t)})
}

// chownToSandbox gives path to sb's user when the engine is root, as if
// sandboxed code had made it.
func (e *Engine) chownToSandbox(sb *Sandbox, path string) {
	if u := e.userOf(sb); u != nil {
		_ = os.Lchown(path, int(u.UID), int(u.GID))
	}
}

// giveToAgent gives the tree project to the user of its agent sandbox
// (made now, as the agent shell's first run would), as if the agent's
// own commands had made it; it returns the sandbox.
func (e *Engine) giveToAgent(t *testing.T, project string) *Sandbox {
	t.Helper()
	dir, err := checkHostDir("projectDir", project, e.guard(), true)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := e.agentSandbox(dir, "", e.Policy())
	if err != nil {
		t.Fatal(err)
	}
	_ = filepath.Walk(project, func(p string, _ os.FileInfo, _ error) error { e.chownToSandbox(sb, p); return nil })
	return sb
}

func ptr[T any](v T) *T { return &v }

func directConfig() SandboxConfig { return SandboxConfig{Backend: ptr("direct")} }

func TestBadInputNamesTheFieldAndChangesNothing(t *testing.T) {
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
		{"cpus_too_low", SandboxConfig{CPUs: ptr(0.01)}, "cpus"},
		{"cpus_too_high", SandboxConfig{CPUs: ptr(33.0)}, "cpus"},
		{"memory_too_low", SandboxConfig{MemoryMB: ptr(10)}, "memoryMb"},
		{"memory_too_high", SandboxConfig{MemoryMB: ptr(70000)}, "memoryMb"},
		{"pids_too_low", SandboxConfig{Pids: ptr(2)}, "pids"},
		{"pids_too_high", SandboxConfig{Pids: ptr(9000)}, "pids"},
		{"timeout_too_low", SandboxConfig{TimeoutMs: ptr(10)}, "timeoutMs"},
		{"timeout_too_high", SandboxConfig{TimeoutMs: ptr(86400001)}, "timeoutMs"},
		{"disk_too_low", SandboxConfig{DiskMB: ptr(1)}, "diskMb"},
		{"unknown_fs_mode", SandboxConfig{FsMode: ptr("everything")}, "fsMode"},
		{"privileged_listen_port", SandboxConfig{Listen: []int{80}}, "listenPorts"},
		{"port_zero", SandboxConfig{Connect: []int{0}}, "connectPorts"},
		{"too_many_ports", SandboxConfig{Loopback: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}}, "loopbackPorts"},
		{"bad_env_name", SandboxConfig{Env: map[string]string{"1X": "y"}}, "env"},
		{"reserved_env", SandboxConfig{Env: map[string]string{"SENCLAW_SANDBOX": "0"}}, "env"},
		{"empty_name", SandboxConfig{Name: ptr("  ")}, "name"},
		{"relative_mount", SandboxConfig{Mounts: []backends.Mount{{Source: "data"}}}, "mounts[0].source"},
		{"missing_mount", SandboxConfig{Mounts: []backends.Mount{{Source: "/nonexistent/x"}}}, "mounts[0].source"},
		{"mount_root", SandboxConfig{Mounts: []backends.Mount{{Source: "/"}}}, "mounts[0].source"},
		{"mount_usr", SandboxConfig{Mounts: []backends.Mount{{Source: "/usr"}}}, "mounts[0].source"},
		{"mount_data_dir", SandboxConfig{Mounts: []backends.Mount{{Source: e.DataDir()}}}, "mounts[0].source"},
		{"mount_parent_of_data_dir", SandboxConfig{Mounts: []backends.Mount{{Source: filepath.Dir(e.DataDir())}}}, "mounts[0].source"},
		{"mount_target_dotdot", SandboxConfig{Mounts: []backends.Mount{{Source: "/usr/share", Target: "../x", ReadOnly: true}}}, "mounts[0].target"},
		{"mount_target_absolute", SandboxConfig{Mounts: []backends.Mount{{Source: "/usr/share", Target: "/x", ReadOnly: true}}}, "mounts[0].target"},
		{"mount_target_reserved", SandboxConfig{Mounts: []backends.Mount{{Source: "/usr/share", Target: ".runs", ReadOnly: true}}}, "mounts[0].target"},
		{"mount_target_twice", SandboxConfig{Mounts: []backends.Mount{{Source: "/usr/share", Target: "a", ReadOnly: true}, {Source: "/usr/lib", Target: "a", ReadOnly: true}}}, "mounts[1].target"},
		{"backend_changed", SandboxConfig{Backend: ptr("bwrap")}, "backend"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Update(sb.ID, tc.cfg)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("update err = %v, want a FieldError on %s", err, tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("message %q does not name the field", err)
			}
			if tc.name != "backend_changed" {
				if _, err := e.Create(context.Background(), tc.cfg); !errors.As(err, &fe) || fe.Field != tc.field {
					t.Fatalf("create err = %v, want the same FieldError on %s", err, tc.field)
				}
			}
		})
	}
	after, err := e.Get(sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.CPUs != sb.CPUs || after.MemoryMB != sb.MemoryMB || after.FsMode != sb.FsMode || len(after.Mounts) != 0 || !after.UpdatedAt.Equal(sb.UpdatedAt) {
		t.Fatalf("the sandbox changed after refused updates: %+v", after)
	}
	all, _ := e.List()
	if len(all) != 1 {
		t.Fatalf("refused creates stored sandboxes: %d", len(all))
	}
}

func TestSettingsDefaultsApplyToNewSandboxes(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	s := e.Settings()
	s.DefaultFsMode = backends.FsOpen
	s.DefaultNetwork = true
	s.DefaultMemoryMB = 1024
	s.DefaultCPUs = 2
	s.DefaultPids = 64
	s.DefaultTimeoutMs = 5000
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if sb.FsMode != backends.FsOpen || !sb.Network || sb.MemoryMB != 1024 || sb.CPUs != 2 || sb.Pids != 64 || sb.TimeoutMs != 5000 {
		t.Fatalf("defaults not applied: %+v", sb)
	}
	bad := s
	bad.DefaultMemoryMB = 1
	if _, err := e.SetSettings(bad); err == nil || !strings.Contains(err.Error(), "defaultMemoryMb") {
		t.Fatalf("bad settings accepted: %v", err)
	}
	if e.Settings().DefaultMemoryMB != 1024 {
		t.Fatal("refused settings were applied")
	}
	bad = s
	bad.SandboxUID = 0
	if _, err := e.SetSettings(bad); err == nil {
		t.Fatal("sandbox uid 0 accepted")
	}
}

func TestUpdateChangesOnlyWhatIsGiven(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("direct"), Name: ptr("a"), Listen: []int{8000, 8000, 3000}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sb.Ports.Listen; len(got) != 2 || got[0] != 3000 || got[1] != 8000 {
		t.Fatalf("listen ports not sorted and deduplicated: %v", got)
	}
	up, err := e.Update(sb.ID, SandboxConfig{MemoryMB: ptr(2048), Name: ptr("b")})
	if err != nil {
		t.Fatal(err)
	}
	if up.MemoryMB != 2048 || up.Name != "b" || up.CPUs != sb.CPUs || len(up.Ports.Listen) != 2 {
		t.Fatalf("update result %+v", up)
	}
}

func TestARestartClosesRunsLeftRunning(t *testing.T) {
	t.Parallel()
	root := testDir(t)
	opts := Options{DataDir: filepath.Join(root, "data"), Backends: []backends.Backend{direct.New()}, EUID: os.Geteuid()}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := RunRecord{ID: e.newRunID(), SandboxID: "s", State: "running", Background: true}
	if err := e.store.PutRun(rec.ID, "s", rec); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.Run(rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "done" || !strings.Contains(got.Killed, "engine stopped") {
		t.Fatalf("record after restart: %+v", got)
	}
}
