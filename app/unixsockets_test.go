package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// unixServer listens on a world-writable socket at path, counts what it
// accepts and tells each client "hello".
func unixServer(t *testing.T, path string) *atomic.Int64 {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	return &n
}

// twoUnixServers makes two sockets that any sandbox user may connect to,
// under /var/tmp (not in a one-shot's own /tmp): outside, whose accepted
// connections it counts, and named, for the settings' allowedSockets.
func twoUnixServers(t *testing.T) (dir, outside, named string, accepted *atomic.Int64) {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "senclaw-unix-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	outside, named = filepath.Join(dir, "out.sock"), filepath.Join(dir, "named.sock")
	accepted = unixServer(t, outside)
	unixServer(t, named)
	return dir, outside, named, accepted
}

// connectAll is a Python program that connects to each path it is given
// and prints "PATH ok" or "PATH ERRNO".
const connectAll = `
import socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p)
        print(p, "ok", s.recv(64).decode().strip())
    except OSError as e:
        print(p, e.errno)
`

// TestUnixSocketsOutsideTheSandboxAreUnreachable: a world-writable
// socket under /var/tmp accepts connections from an open-mode sandbox
// with the network off unless the engine guards connect(); it must be
// refused in every fs mode (in strict mode through a read-only mount of
// its folder, in allowlist mode through the allowlist), with the network
// off and on, while a socket the settings name stays reachable.
func TestUnixSocketsOutsideTheSandboxAreUnreachable(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	if ok, why := unixguard.Available(); !ok {
		t.Skipf("this kernel cannot run the guard: %s", why)
	}
	dir, outside, named, accepted := twoUnixServers(t)
	s := e.Settings()
	s.Allowlist = []string{dir}
	s.AllowedSockets = []string{named}
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"open", "allowlist", "strict"} {
		for _, network := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/network_%v", mode, network), func(t *testing.T) {
				t.Parallel()
				cfg := SandboxConfig{FsMode: ptr(mode), Network: ptr(network)}
				path := outside
				if mode == "strict" {
					cfg.Mounts = []backends.Mount{{Source: dir, Target: "mnt", ReadOnly: true}}
					path = "mnt/out.sock"
				}
				res, err := e.RunOnce(context.Background(), cfg, RunRequest{Argv: []string{"python3", "-c", connectAll, path, named}})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Record.OK() {
					t.Fatalf("run %+v\n%s", res.Record, res.Stderr)
				}
				wantLines(t, strings.TrimSpace(res.Stdout), path+" 13", named+" ok hello")
				if !strings.Contains(strings.Join(res.Record.Enforced, "; "), "unix sockets: connect() checked by the engine") {
					t.Errorf("the record does not say that Unix sockets were guarded: %q", res.Record.Enforced)
				}
			})
		}
	}
	t.Cleanup(func() {
		if n := accepted.Load(); n != 0 {
			t.Errorf("the socket outside the sandbox accepted %d connections", n)
		}
	})
}

// TestAllowedSocketsSetting: the owner may name sockets; the engine's own
// sockets, container engines' sockets, links and relative paths are
// refused with the field and the value named, and the note lists them.
func TestAllowedSocketsSetting(t *testing.T) {
	t.Parallel()
	e := bwrapEngine(t)
	dir := testDir(t)
	sock := filepath.Join(dir, "db.sock")
	unixServer(t, sock)
	link := filepath.Join(dir, "link.sock")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		name, path, want string
	}{
		{"relative", "db.sock", "absolute"},
		{"unclean", dir + "/./db.sock", "absolute, clean"},
		{"docker", "/var/run/docker.sock", "container engine"},
		{"rootless_docker", "/run/user/1000/docker.sock", "container engine"},
		{"engine_api", filepath.Join(e.opts.RuntimeDir, "api.sock"), "private"},
		{"proxy_of_another_sandbox", filepath.Join(e.DataDir(), "net", "abc", "proxy.sock"), "private"},
		{"symlink", link, "symlink"},
		{"not_a_socket", file, "not a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := e.Settings()
			s.AllowedSockets = []string{tc.path}
			_, err := e.SetSettings(s)
			var fe *FieldError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "allowedSockets[0]") || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("want a refusal naming allowedSockets[0], %q and %q, got %v", tc.path, tc.want, err)
			} else if !errors.As(err, &fe) {
				t.Errorf("not a field error: %v", err)
			}
			if got := e.Settings().AllowedSockets; len(got) != 0 {
				t.Errorf("a refused setting changed the settings: %q", got)
			}
		})
	}
	s := e.Settings()
	s.AllowedSockets = []string{sock, sock, "/run/postgresql/.s.PGSQL.5432"}
	got, err := e.SetSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.AllowedSockets) != 2 {
		t.Errorf("saved %q, want the two distinct sockets", got.AllowedSockets)
	}
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap")})
	if err != nil {
		t.Fatal(err)
	}
	if note := e.CreateNotes(context.Background(), sb).Text(); !strings.Contains(note, "allowedSockets ("+sock+", /run/postgresql/.s.PGSQL.5432)") {
		t.Errorf("the note does not name the allowed sockets: %s", note)
	}
}
