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
