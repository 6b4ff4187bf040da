package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/idmap"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestIDMappedReadWriteMounts: a root engine binds a read-write mount its
// sandbox user cannot write (root's 0755) through an idmapped mount: the
// sandbox writes it, the host sees what it wrote owned by root, and the
// create note says so. Where no idmapped mount can be made (a kernel
// without them, simulated; a backend that cannot bind one), the sandbox
// is refused when it is created, with the reason, never with a
// "Permission denied" later.
func TestIDMappedReadWriteMounts(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("idmapped mounts are for a root engine: CI runs as root")
		}
		t.Skip("idmapped mounts are for a root engine")
	}
	src := filepath.Join(testutil.SandboxDir(t, "sc-idmapped-"), "root-owned")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(src, 0o755)
	ctx := context.Background()
	rw := func(src string) []backends.Mount { return []backends.Mount{{Source: src, Target: "data"}} }

	t.Run("written_as_the_folders_owner", func(t *testing.T) {
		t.Parallel()
		e := bwrapEngine(t)
		sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("bwrap"), Mounts: rw(src)})
		if err != nil {
			t.Fatal(err)
		}
		if note := strings.Join(e.CreateNotes(ctx, sb).Details, "; "); !strings.Contains(note, "idmapped mount") || !strings.Contains(note, "belongs to uid 0") {
			t.Errorf("the create note does not say so: %s", note)
		}
		res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "echo hello > data/from-the-sandbox && cat data/from-the-sandbox"})
		if err != nil || !res.Record.OK() || res.Stdout != "hello\n" {
			t.Fatalf("run: %v %+v\nstderr %s", err, res.Record, res.Stderr)
		}
		fi, err := os.Stat(filepath.Join(src, "from-the-sandbox"))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
			t.Errorf("the file is owned by %d:%d on the host, want root's", st.Uid, st.Gid)
		}
		// Read-only, nothing is mapped: the sandbox user cannot write it.
		ro, err := e.RunOnce(ctx, SandboxConfig{Mounts: []backends.Mount{{Source: src, Target: "data", ReadOnly: true}}}, RunRequest{Command: "touch data/x"})
		if err != nil || ro.Record.OK() {
			t.Errorf("a read-only mount was written: %v %+v", err, ro.Record)
		}
	})

	t.Run("refused_at_create_without_idmapped_mounts", func(t *testing.T) {
		t.Parallel()
		e := bwrapEngine(t, func(o *Options) {
			o.IDMapCheck = func(string, idmap.Mapping) error {
				return errors.New("this kernel has no idmapped mounts (simulated)")
			}
		})
		_, err := e.Create(ctx, SandboxConfig{Mounts: rw(src)})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "mounts[0].source" || !strings.Contains(err.Error(), "cannot write it") || !strings.Contains(err.Error(), "no idmapped mounts (simulated)") || !strings.Contains(err.Error(), ":ro") {
			t.Fatalf("create: %v", err)
		}
		if _, err := e.RunOnce(ctx, SandboxConfig{Mounts: rw(src)}, RunRequest{Command: "true"}); err == nil || !strings.Contains(err.Error(), "no idmapped mounts") {
			t.Errorf("a one-shot run: %v", err)
		}
		if all, _ := e.List(); len(all) != 0 {
			t.Errorf("a refused create left %d sandboxes", len(all))
		}
		// Read-only it is fine.
		if _, err := e.Create(ctx, SandboxConfig{Mounts: []backends.Mount{{Source: src, Target: "data", ReadOnly: true}}}); err != nil {
			t.Errorf("read-only: %v", err)
		}
	})

	t.Run("refused_at_create_on_a_backend_without_them", func(t *testing.T) {
		t.Parallel()
		e := bwrapEngine(t)
		s := e.Settings()
		s.AllowDirect = true
		if _, err := e.SetSettings(s); err != nil {
			t.Fatal(err)
		}
		_, err := e.Create(ctx, SandboxConfig{Backend: ptr("direct"), Mounts: rw(src)})
		if err == nil || !strings.Contains(err.Error(), "direct backend cannot bind idmapped mounts") {
			t.Fatalf("create: %v", err)
		}
	})
}

// TestIDMappedProjects: as root, a project folder of root's (run --here,
// the agent shell's project) is bound through an idmapped mount as a
// read-write mount is: the sandbox writes it, what it writes is root's on
// the host, and the record and the create note say so; so is a project
// below a folder the sandbox user cannot walk (0700), and a read-only
// mount there reads as a read-write one does (both were refused, or
// failed with "Permission denied", before). Without idmapped mounts
// (simulated) each is refused up front with the reason.
func TestIDMappedProjects(t *testing.T) {
	t.Parallel()
	testutil.RequireRoot(t)
	base := testutil.SandboxDir(t, "sc-idmapped-projects-")
	project := filepath.Join(base, "project")
	private := filepath.Join(base, "private") // as /root is
	data := filepath.Join(private, "data")
	inPrivate := filepath.Join(private, "project")
	for _, d := range []string{project, private, data, inPrivate} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(project, 0o755)
	os.Chmod(private, 0o700)
	if err := os.WriteFile(filepath.Join(data, "notes"), []byte("root's notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rootOwned := func(t *testing.T, p string) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s is owned by %d:%d on the host, want root's", p, st.Uid, st.Gid)
		}
	}

	for name, dir := range map[string]string{"root_owned": project, "below_0700": inPrivate} {
		t.Run("here_"+name, func(t *testing.T) {
			t.Parallel()
			e := bwrapEngine(t)
			sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("bwrap"), ProjectDir: &dir})
			if err != nil {
				t.Fatal(err)
			}
			if note := strings.Join(e.CreateNotes(ctx, sb).Details, "; "); !strings.Contains(note, "the project folder "+dir+" is not writable") {
				t.Errorf("the create note does not say so: %s", note)
			}
			res, err := e.Exec(ctx, sb.ID, RunRequest{Command: "echo hello > from-here && cat from-here"})
			if err != nil || !res.Record.OK() || res.Stdout != "hello\n" {
				t.Fatalf("run: %v %+v\nstderr %s", err, res.Record, res.Stderr)
			}
			rootOwned(t, filepath.Join(dir, "from-here"))
			if enf := strings.Join(res.Record.Enforced, "\n"); !strings.Contains(enf, "project "+dir+": writable through an idmapped mount") {
				t.Errorf("the record does not say how the project is writable: %s", enf)
			}
		})
	}

	t.Run("agent_shell", func(t *testing.T) {
		t.Parallel()
		e := agentShellEngines(t)["bwrap"]
		res, err := e.AgentShell(ctx, AgentShellRequest{ProjectDir: project, Command: "touch from-the-agent && echo done"})
		if err != nil || !res.Record.OK() || res.Stdout != "done\n" {
			t.Fatalf("agent shell: %v %+v\nstderr %s", err, res.Record, res.Stderr)
		}
		rootOwned(t, filepath.Join(project, "from-the-agent"))
	})

	t.Run("mounts_below_0700", func(t *testing.T) {
		t.Parallel()
		e := bwrapEngine(t)
		ro, err := e.RunOnce(ctx, SandboxConfig{Mounts: []backends.Mount{{Source: data, Target: "data", ReadOnly: true}}},
			RunRequest{Command: "cat data/notes; touch data/x 2>/dev/null && echo written"})
		if err != nil || ro.Stdout != "root's notes\n" {
			t.Fatalf("read-only: %v %q %+v", err, ro.Stdout, ro.Record)
		}
		rw, err := e.RunOnce(ctx, SandboxConfig{Mounts: []backends.Mount{{Source: data, Target: "data"}}},
			RunRequest{Command: "cat data/notes; touch data/x && echo written"})
		if err != nil || rw.Stdout != "root's notes\nwritten\n" {
			t.Fatalf("read-write: %v %q %+v", err, rw.Stdout, rw.Record)
		}
		rootOwned(t, filepath.Join(data, "x"))
	})

	t.Run("refused_without_idmapped_mounts", func(t *testing.T) {
		t.Parallel()
		e := bwrapEngine(t, func(o *Options) {
			o.IDMapCheck = func(string, idmap.Mapping) error {
				return errors.New("this kernel has no idmapped mounts (simulated)")
			}
		})
		_, err := e.Create(ctx, SandboxConfig{ProjectDir: &project})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "projectDir" || !strings.Contains(err.Error(), "cannot write the project folder") || !strings.Contains(err.Error(), "(simulated)") {
			t.Fatalf("create: %v", err)
		}
		pol := e.Policy()
		pol.ExecShell = true
		if _, err := e.SetPolicy(pol); err != nil {
			t.Fatal(err)
		}
		_, err = e.AgentShell(ctx, AgentShellRequest{ProjectDir: project, Command: "true"})
		if err == nil || !strings.Contains(err.Error(), "cannot write the project folder") {
			t.Errorf("agent shell: %v", err)
		}
		_, err = e.Create(ctx, SandboxConfig{Mounts: []backends.Mount{{Source: data, Target: "data", ReadOnly: true}}})
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "cannot reach it") {
			t.Errorf("a read-only mount out of reach: %v", err)
		}
	})
}
