package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

// The mount guard refuses what would let a sandbox, or the file API
// acting for it, reach past its wall: writable folders in the system
// trees, this machine's services' paths, secret folders, other engines'
// dirs. Create, update, sbx_mount / POST mounts, the allowlist and the
// agent's project dir all judge the same way.
func TestTheMountGuard(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	scratch, err := os.MkdirTemp("/var/tmp", "senclaw-guard-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(scratch) })
	other := testDir(t) // a home with another engine's data dir and keys
	for _, d := range []string{".local/share/senclaw", ".ssh", "project"} {
		os.MkdirAll(filepath.Join(other, d), 0o755)
	}
	// The folders given read-write are the sandbox user's to write: a root
	// engine refuses those it cannot (TestIDMappedReadWriteMounts).
	for _, d := range []string{scratch, filepath.Join(other, "project")} {
		os.Chmod(d, 0o777)
	}
	os.WriteFile(filepath.Join(other, ".local/share/senclaw/senclaw.db"), []byte("db"), 0o600)
	cases := []struct {
		name, source string
		readOnly     bool
		refused      string // what the reason says (one of |-separated); "" when accepted
	}{
		{"etc_rw", "/etc/systemd/system", false, "system tree /etc"},
		{"etc_ssl_rw", "/etc/ssl/private", false, "system tree /etc"},
		{"usr_local_bin_rw", "/usr/local/bin", false, "system tree /usr"},
		{"usr_local_bin_ro", "/usr/local/bin", true, ""},
		{"var_lib_rw", "/var/lib/apt", false, "system tree /var"},
		{"var_tmp_rw", scratch, false, ""},
		{"opt_rw", "/opt", false, "system directory"},
		{"docker_data_ro", "/var/lib/docker", true, "services"},
		// /var/lib may hold a root engine's /var/lib/senclaw as well.
		{"holds_docker_data_ro", "/var/lib", true, "services|SenClaw engine"},
		{"engine_data_ro", filepath.Join(other, ".local/share/senclaw"), true, "SenClaw engine"},
		{"holds_engine_data_ro", filepath.Join(other, ".local"), true, "SenClaw engine"},
		{"ssh_ro", filepath.Join(other, ".ssh"), true, "secret folder"},
		{"home_ro", other, true, "secret folder .ssh"},
		{"project_rw", filepath.Join(other, "project"), false, ""},
	}
	for _, tc := range cases {
		if _, err := os.Stat(tc.source); err != nil {
			continue // not on this machine
		}
		m := backends.Mount{Source: tc.source, Target: "m", ReadOnly: tc.readOnly}
		check := func(how string, err error, field string) {
			t.Helper()
			if tc.refused == "" {
				if err != nil {
					t.Errorf("%s %s: %v", tc.name, how, err)
				}
				return
			}
			var fe *FieldError
			says := slices.ContainsFunc(strings.Split(tc.refused, "|"), func(r string) bool { return strings.Contains(fmt.Sprint(err), r) })
			if !errors.As(err, &fe) || fe.Field != field || !says || !strings.Contains(err.Error(), `"`+tc.source+`"`) {
				t.Errorf("%s %s: %v, want a refusal of %s naming %q and saying %q", tc.name, how, err, field, tc.source, tc.refused)
			}
		}
		_, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("direct"), Mounts: []backends.Mount{m}})
		check("create", err, "mounts[0].source")
		sb, err := e.Create(context.Background(), directConfig())
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Update(sb.ID, SandboxConfig{Mounts: []backends.Mount{m}})
		check("update", err, "mounts[0].source")
		m.Target = "other"
		_, err = e.AddMount(sb.ID, m)
		check("mount", err, "source")
		if tc.readOnly {
			s := e.Settings()
			s.Allowlist = []string{tc.source}
			_, err = e.SetSettings(s)
			check("allowlist", err, "allowlist[0]")
		} else {
			_, err = e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: tc.source, Command: "true"})
			check("project dir", err, "projectDir")
		}
	}
}

// The owner can widen the guard with mountAllow, and the create and
// update notes then say so; the engine's own dirs, secret folders and
// other engines' dirs stay refused whatever it says, an agent cannot set
// it, and a sandbox saved under it is refused at its next run once it is
// taken back.
func TestMountAllowWidensTheGuardAndSaysSo(t *testing.T) {
	t.Parallel()
	e, backend := directEngine(t), "direct"
	if os.Geteuid() == 0 {
		// root's /usr/local/share, read-write, is the sandbox user's only
		// through an idmapped mount, which bwrap binds and direct cannot.
		e, backend = bwrapEngine(t), "bwrap"
	}
	src := "/usr/local/share"
	if _, err := os.Stat(src); err != nil {
		t.Skip(err)
	}
	s := e.Settings()
	s.MountAllow = []string{src}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr(backend), Mounts: []backends.Mount{{Source: src, Target: "share"}}})
	if err != nil {
		t.Fatal(err)
	}
	if note := e.CreateNotes(context.Background(), sb).Text(); !strings.Contains(note, "mountAllow") || !strings.Contains(note, src) {
		t.Errorf("create note %q does not say that mountAllow let %s in", note, src)
	}
	up, err := e.Update(sb.ID, SandboxConfig{Name: ptr("renamed")})
	if err != nil {
		t.Fatal(err)
	}
	if note := e.ChangeNotes(context.Background(), up).Text(); !strings.Contains(note, "mountAllow") {
		t.Errorf("change note %q does not say so", note)
	}
	for _, bad := range []string{e.DataDir(), e.opts.ConfigDir, filepath.Join(e.opts.HomeDir, ".ssh"), "/"} {
		s := e.Settings()
		s.MountAllow = []string{bad}
		if _, err := e.SetSettings(s); err == nil || !strings.Contains(err.Error(), "mountAllow[0]") {
			t.Errorf("mountAllow %q: %v", bad, err)
		}
	}
	s.MountAllow = []string{}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "true"}); err == nil || !strings.Contains(err.Error(), "mounts[0].source") {
		t.Errorf("a run with a mount the guard now refuses: %v", err)
	}
}
