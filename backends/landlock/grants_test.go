package landlock

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// fakeDisk is a directory tree for Grants: each directory with its
// entries ("name/" is a directory, "name@" a symlink, else a file).
type fakeDisk map[string][]string

func (d fakeDisk) list(dir string) ([]Entry, error) {
	names, ok := d[dir]
	if !ok {
		return nil, errors.New("permission denied")
	}
	var out []Entry
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "/"):
			out = append(out, Entry{Name: strings.TrimSuffix(n, "/"), Dir: true})
		case strings.HasSuffix(n, "@"):
			out = append(out, Entry{Name: strings.TrimSuffix(n, "@"), Symlink: true})
		default:
			out = append(out, Entry{Name: n})
		}
	}
	return out, nil
}

// disk is a small host: a merged /usr, a home with secrets, the engine's
// data dir under /var/lib (workspaces inside it), /root unreadable.
func disk() fakeDisk {
	return fakeDisk{
		"/":                                 {"bin@", "dev/", "etc/", "home/", "lib@", "opt/", "proc/", "root/", "run/", "srv/", "tmp/", "usr/", "var/", "vmlinuz@"},
		"/usr":                              {"bin/", "lib/", "local/", "share/"},
		"/usr/bin":                          {"env", "python3@", "python3.11", "sh", "node"},
		"/usr/local":                        {"bin/", "lib/"},
		"/usr/local/bin":                    {"python3.12"},
		"/home":                             {"ann/", "bob/"},
		"/home/ann":                         {".aws/", ".bashrc", ".ssh/", "notes/", "project/", "link-to-ssh@"},
		"/var":                              {"cache/", "lib/", "log/", "tmp/"},
		"/var/lib":                          {"apt/", "docker/", "senclaw/"},
		"/var/lib/senclaw":                  {"senclaw.db", "workspaces/"},
		"/var/lib/senclaw/workspaces":       {"w1/"},
		"/home/ann/notes":                   {"a.txt"},
		"/var/lib/senclaw/workspaces/w1":    {"x"},
		"/home/bob":                         {"todo"},
		"/opt":                              {"tool/"},
		"/srv":                              {"data/"},
		"/etc":                              {"passwd"},
		"/run":                              {"current-system@"},
		"/var/lib/senclaw/workspaces/w1/.x": {},
	}
}

func TestGrantsGolden(t *testing.T) {
	t.Parallel()
	roots := []string{"/usr", "/etc", "/opt"}
	hidden := []string{"/home/ann/.ssh", "/home/ann/.aws", "/var/lib/senclaw", "/var/lib/docker", "/root/.config"}
	ws := "/var/lib/senclaw/workspaces/w1"
	grown := disk()
	// A sibling that appeared after the engine started: the set made at
	// the next run has it.
	grown["/home/ann"] = append(grown["/home/ann"], "new-since-start/")
	cases := []struct {
		name string
		spec backends.Spec
		host Host
		disk fakeDisk
	}{
		{"strict", backends.Spec{FsMode: backends.FsStrict, Workspace: ws}, Host{Roots: roots}, disk()},
		{"strict_masked_python", backends.Spec{FsMode: backends.FsStrict, Workspace: ws},
			Host{Roots: roots, Masked: []string{"/usr/bin/python3.11", "/usr/local/bin/python3.12"}}, disk()},
		{"allowlist", backends.Spec{FsMode: backends.FsAllowlist, Workspace: ws},
			Host{Roots: roots, ReadPaths: []string{"/srv/data", "/usr/share"}}, disk()},
		{"mounts", backends.Spec{FsMode: backends.FsStrict, Workspace: ws, Mounts: []backends.Mount{
			{Source: "/home/ann/notes", Target: "notes", ReadOnly: true}, {Source: "/srv/data", Target: "data"}}},
			Host{Roots: roots, Masked: []string{"/usr/bin/node"}}, disk()},
		{"open_hidden", backends.Spec{FsMode: backends.FsOpen, Workspace: ws}, Host{Roots: roots, Hidden: hidden}, disk()},
		{"open_new_sibling", backends.Spec{FsMode: backends.FsOpen, Workspace: ws}, Host{Roots: roots, Hidden: hidden}, grown},
		{"open_masked_mount_in_hidden", backends.Spec{FsMode: backends.FsOpen, Workspace: ws, Mounts: []backends.Mount{
			{Source: "/home/ann/.aws", Target: "aws", ReadOnly: true}}},
			Host{Roots: append(roots, "/run/current-system"), Hidden: hidden, Masked: []string{"/usr/bin/python3.11"},
				Files: []string{"/var/lib/senclaw/net/s1/node-proxy.cjs"}}, disk()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			for _, g := range Grants(&tc.spec, tc.host, tc.disk.list) {
				kind := "file"
				if g.Dir {
					kind = "dir"
				}
				fmt.Fprintf(&b, "%-10s %-4s %s\n", g.Access, kind, g.Path)
			}
			got := b.String()
			file := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("grants differ from %s:\n%s", file, got)
			}
			checkNever(t, got, tc.host)
		})
	}
}

// checkNever checks what must hold whatever the golden files say: no
// grant is a hidden or masked path or holds one, and a symlink entry is
// never granted (it would grant where it leads).
func checkNever(t *testing.T, got string, host Host) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		f := strings.Fields(line)
		access, p := f[0], f[2]
		if access == string(ReadWrite) {
			continue // the workspace and rw mounts are granted as they are
		}
		for _, x := range append(host.Hidden, host.Masked...) {
			if under(x, []string{p}) && !strings.HasPrefix(p, "/home/ann/.aws") {
				t.Errorf("%s grants %s, which holds %s", line, p, x)
			}
		}
		for _, link := range []string{"/bin", "/lib", "/vmlinuz", "/usr/bin/python3", "/home/ann/link-to-ssh", "/run/current-system"} {
			if p == link && !slices.Contains(host.Roots, link) {
				t.Errorf("%s grants the symlink %s", line, link)
			}
		}
	}
}

func TestUnmaskable(t *testing.T) {
	t.Parallel()
	spec := &backends.Spec{Workspace: "/w", Mounts: []backends.Mount{{Source: "/m", Target: "m"}, {Source: "/ro", Target: "ro", ReadOnly: true}}}
	cases := []struct {
		name   string
		masked []string
		want   bool
	}{
		{"system", []string{"/usr/bin/python3"}, false},
		{"read_only_mount", []string{"/ro/bin/python3"}, false},
		{"workspace", []string{"/usr/bin/node", "/w/.venv/bin/python3"}, true},
		{"rw_mount", []string{"/m/python3"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, got := Unmaskable(spec, tc.masked); got != tc.want {
				t.Errorf("Unmaskable(%q) = %v", tc.masked, got)
			}
		})
	}
}
