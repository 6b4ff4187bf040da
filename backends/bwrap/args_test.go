package bwrap

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/idmap"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// debianHost is a merged-/usr host: /bin, /sbin and /lib* are links.
var debianHost = Host{
	Roots: []Root{
		{Path: "/usr"}, {Path: "/bin", Symlink: "usr/bin"}, {Path: "/sbin", Symlink: "usr/sbin"},
		{Path: "/lib", Symlink: "usr/lib"}, {Path: "/lib64", Symlink: "usr/lib64"},
		{Path: "/etc"},
	},
	Prefixes: []string{"/opt/python3.12"},
	Hidden: map[string]PathKind{
		"/home/ann":                  Dir,
		"/home/ann/.local/share/sc":  Dir,
		"/etc/shadow":                File,
		"/home/ann/.config/gone":     Absent,
		"/home/ann/.ssh/id_ed25519":  File,
		"/srv/shared/.aws":           Dir,
		"/srv/not-exposed/.netrc":    File,
		"/home/ann/.local/share/sc2": Dir,
	},
	Masked: map[string]PathKind{
		"/usr/bin/python3.11":                             File,
		"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0":  File,
		"/home/ann/.pyenv/versions/3.12.1/bin/python3.12": File,
		"/usr/bin/gone":                                   Absent,
	},
}

func baseSpec(mode backends.FsMode) *backends.Spec {
	return &backends.Spec{
		RunID:     "r1",
		Workspace: "/home/ann/.local/share/sc/workspaces/s1",
		Argv:      []string{"python3", "-c", "print('hi')"},
		// A value may hold "=", "--" or nothing: bwrap takes each option
		// and value as one argument.
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=/home/ann/.local/share/sc/workspaces/s1", "OPTS=--bind / /x", "EMPTY="},
		FsMode: mode,
	}
}

func argsCases() []struct {
	name string
	spec *backends.Spec
} {
	allow := baseSpec(backends.FsAllowlist)
	allow.ReadPaths = []string{"/srv/shared", "/data/ro"}
	allow.Hidden = []string{"/srv/shared/.aws", "/srv/not-exposed/.netrc", "/home/ann"}
	open := baseSpec(backends.FsOpen)
	open.Hidden = []string{"/home/ann", "/home/ann/.local/share/sc", "/etc/shadow", "/home/ann/.config/gone", "/home/ann/.ssh/id_ed25519"}
	mounts := baseSpec(backends.FsStrict)
	mounts.Mounts = []backends.Mount{
		{Source: "/srv/data", Target: "data"},
		{Source: "/srv/models", Target: "models/base", ReadOnly: true},
		{Source: "/srv/evil", Target: "../../escape"},
	}
	plumbing := func(listen, loopback []int) *backends.NetPlumbing {
		return &backends.NetPlumbing{Dir: "/home/ann/.local/share/sc/net/s1", Forwarder: "/usr/lib/senclaw/senclaw-netfwd", Listen: listen, Loopback: loopback}
	}
	netOn := baseSpec(backends.FsStrict)
	netOn.Network = true
	netOn.Net = plumbing(nil, nil)
	ports := baseSpec(backends.FsStrict)
	ports.Ports = backends.PortRules{Listen: []int{8080}, Loopback: []int{5432}}
	ports.Net = plumbing([]int{8080}, []int{5432})
	openNet := baseSpec(backends.FsOpen)
	openNet.Network = true
	openNet.Hidden = []string{"/home/ann", "/home/ann/.local/share/sc"}
	openNet.Net = plumbing(nil, nil)
	// Run Python off: the interpreters are masked where they are in view,
	// and where a mount shows them again.
	maskedFiles := []string{"/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "/home/ann/.pyenv/versions/3.12.1/bin/python3.12", "/usr/bin/gone"}
	masked := baseSpec(backends.FsStrict)
	masked.Masked = maskedFiles
	masked.MaskedRuntimes = []string{backends.RuntimePython}
	masked.Mounts = []backends.Mount{{Source: "/usr/lib", Target: "syslib", ReadOnly: true}}
	// An agent's project: what programs on the host run code from is
	// bound read-only over itself, in the project and in a read-write
	// mount, after the binds that show it.
	project := baseSpec(backends.FsStrict)
	project.Workspace = "/home/ann/code/app"
	project.Mounts = []backends.Mount{{Source: "/home/ann/code/lib", Target: "vendor/lib"}, {Source: "/srv/models", Target: "models", ReadOnly: true}}
	project.Protected = []string{"/home/ann/code/app/.claude", "/home/ann/code/app/.git/config", "/home/ann/code/app/.git/hooks", "/home/ann/code/lib/.vscode"}
	// A root engine's project of root's, and its mounts, bound through
	// idmapped mounts: from the launcher's mount points, what must stay
	// read-only in them too (the sandbox user may not walk to them on
	// the host).
	idmapped := baseSpec(backends.FsStrict)
	idmapped.Workspace = "/root/code/app"
	idmapped.WorkspaceIDMap = true
	idmapped.Mounts = []backends.Mount{{Source: "/root/code/lib", Target: "vendor/lib", IDMap: true}, {Source: "/root/data", Target: "data", ReadOnly: true, IDMap: true}, {Source: "/srv/models", Target: "models", ReadOnly: true}}
	idmapped.Protected = []string{"/root/code/app/.claude", "/root/code/app/.git/hooks", "/root/code/lib/.vscode"}
	// Its package caches, the engine's, in the private /tmp.
	idmapped.Caches = []backends.Mount{{Source: "/var/lib/senclaw/caches/project-0123456789abcdef/cache", Target: "/tmp/senclaw-cache", IDMap: true}}
	cached := baseSpec(backends.FsStrict)
	cached.Caches = []backends.Mount{{Source: "/home/ann/.local/share/senclaw/caches/project-0123456789abcdef/cache", Target: "/tmp/senclaw-cache"}}
	openMasked := baseSpec(backends.FsOpen)
	openMasked.Masked = maskedFiles
	openMasked.MaskedRuntimes = []string{backends.RuntimePython}
	return []struct {
		name string
		spec *backends.Spec
	}{
		{"masked_strict", masked},
		{"masked_open", openMasked},
		{"strict", baseSpec(backends.FsStrict)},
		{"allowlist", allow},
		{"open_hidden", open},
		{"mounts_rw_ro", mounts},
		{"network_on", netOn},
		{"network_off", baseSpec(backends.FsStrict)},
		{"ports_listed", ports},
		{"open_network_on", openNet},
		{"project_protected", project},
		{"project_idmapped", idmapped},
		{"caches", cached},
	}
}

// argsCase is the spec of one of argsCases.
func argsCase(t *testing.T, name string) *backends.Spec {
	for _, tc := range argsCases() {
		if tc.name == name {
			return tc.spec
		}
	}
	t.Fatalf("no args case %q", name)
	return nil
}

func TestArgsGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range argsCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host := debianHost
			host.IDMapDir = "/var/lib/senclaw/idmap"
			got := strings.Join(Args(tc.spec, host, FDs{Seccomp: 3, Info: 4, Block: 5}), "\n") + "\n"
			testutil.Golden(t, filepath.Join("testdata", tc.name+".golden"), got, *update)
		})
	}
}

// golden compares argv with testdata/name.golden (rewritten by -update).
func golden(t *testing.T, name string, argv []string) {
	t.Helper()
	got := strings.Join(argv, "\n") + "\n"
	file := filepath.Join("testdata", name+".golden")
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
		t.Errorf("argv differs from %s:\ngot:\n%s\nwant:\n%s", file, got, want)
	}
}

func TestArgsInvariants(t *testing.T) {
	t.Parallel()
	for _, tc := range argsCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := Args(tc.spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5})
			joined := " " + strings.Join(a, " ") + " "
			for _, bad := range []string{"--share-net", "--cap-add", "--bind-fd", "--ro-bind-fd"} {
				if strings.Contains(joined, " "+bad+" ") {
					t.Errorf("contains %s", bad)
				}
			}
			for _, must := range []string{"--die-with-parent", "--new-session", "--unshare-user", "--disable-userns", "--unshare-pid", "--seccomp", "--clearenv"} {
				if !slices.Contains(a, must) {
					t.Errorf("missing %s", must)
				}
			}
			if tc.spec.FsMode != backends.FsOpen && strings.Contains(joined, " --ro-bind / / ") {
				t.Errorf("%s mode binds the whole root", tc.spec.FsMode)
			}
			// Every sandbox has its own network namespace, network on or
			// off; nothing ever listens on every address.
			if !slices.Contains(a, "--unshare-net") {
				t.Errorf("--unshare-net missing")
			}
			if strings.Contains(joined, "0.0.0.0") {
				t.Errorf("contains 0.0.0.0")
			}
			sep := slices.Index(a, "--")
			want := tc.spec.Argv
			if tc.spec.Net != nil {
				want = netfwd.Argv(tc.spec.Net, tc.spec.Argv)
				if indexPair(a, "--bind", tc.spec.Net.Dir, netfwd.MountDir) < 0 || indexPair(a, "--ro-bind", tc.spec.Net.Forwarder, netfwd.BinaryPath) < 0 {
					t.Errorf("network plumbing not bound: %q", a)
				}
			} else if strings.Contains(joined, netfwd.MountDir) {
				t.Errorf("network off, yet %s is there", netfwd.MountDir)
			}
			if sep < 0 || !slices.Equal(a[sep+1:], want) {
				t.Errorf("argv not after --: %q", a)
			}
			src := tc.spec.Workspace
			if tc.spec.WorkspaceIDMap {
				// Attached by the launcher, from the engine's handle.
				src = idmap.Point(debianHost.IDMapDir, len(tc.spec.Mounts))
			}
			ws := indexPair(a, "--bind", src, tc.spec.Workspace)
			if ws < 0 {
				t.Fatalf("no workspace bind")
			}
			for i := 0; i+1 < len(a); i++ {
				if a[i] == "--bind" || a[i] == "--ro-bind" {
					// The private /tmp is the run's own (the caches are bound there).
					if a[i] == "--bind" && i != ws && !strings.HasPrefix(a[i+2], tc.spec.Workspace+"/") && a[i+2] != netfwd.MountDir && !strings.HasPrefix(a[i+2], "/tmp/") {
						t.Errorf("writable bind outside the workspace: %q", a[i:i+3])
					}
				}
			}
			root := indexPair(a, "--ro-bind", "/", "/")
			for _, h := range tc.spec.Hidden {
				i := slices.Index(a, h)
				if i < 0 {
					continue
				}
				if i < root || i > ws {
					t.Errorf("hidden %s at %d is not between the root bind (%d) and the workspace (%d)", h, i, root, ws)
				}
			}
		})
	}
}

// indexPair finds op followed by a and b.
func indexPair(args []string, op, a, b string) int {
	for i := 0; i+2 < len(args); i++ {
		if args[i] == op && args[i+1] == a && args[i+2] == b {
			return i
		}
	}
	return -1
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := baseSpec(backends.FsStrict)
	cases := []struct {
		name   string
		change func(s *backends.Spec)
		valid  bool
	}{
		{"valid", func(s *backends.Spec) {}, true},
		{"unknown_mode", func(s *backends.Spec) { s.FsMode = "wide" }, false},
		{"relative_workspace", func(s *backends.Spec) { s.Workspace = "ws" }, false},
		{"root_workspace", func(s *backends.Spec) { s.Workspace = "/" }, false},
		{"unclean_workspace", func(s *backends.Spec) { s.Workspace = "/a/../b" }, false},
		{"empty_argv", func(s *backends.Spec) { s.Argv = nil }, false},
		{"mount_escape", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: "/x", Target: "../y"}} }, false},
		{"mount_absolute", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: "/x", Target: "/y"}} }, false},
		{"bad_run_id", func(s *backends.Spec) { s.RunID = "../x" }, false},
		{"relative_hidden", func(s *backends.Spec) { s.Hidden = []string{"x"} }, false},
		{"env_without_equals", func(s *backends.Spec) { s.Env = []string{"PATH=/bin", "NOVALUE"} }, false},
		{"env_without_name", func(s *backends.Spec) { s.Env = []string{"=x"} }, false},
		{"protected_in_workspace", func(s *backends.Spec) { s.Protected = []string{s.Workspace + "/.claude"} }, true},
		{"protected_outside", func(s *backends.Spec) { s.Protected = []string{"/etc/passwd"} }, false},
		{"protected_workspace_itself", func(s *backends.Spec) { s.Protected = []string{s.Workspace} }, false},
		{"protected_in_read_only_mount", func(s *backends.Spec) {
			s.Mounts = []backends.Mount{{Source: "/srv/m", Target: "m", ReadOnly: true}}
			s.Protected = []string{"/srv/m/.git/config"}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := *ok
			tc.change(&s)
			if err := validate(&s); (err == nil) != tc.valid {
				t.Errorf("validate = %v, want valid=%v", err, tc.valid)
			}
		})
	}
}

// With handles for the mount sources, each mount is bound from its fd
// (the directory the engine opened and checked), in order, and nothing
// else changes.
func TestArgsBindMountsByHandle(t *testing.T) {
	t.Parallel()
	spec := argsCase(t, "mounts_rw_ro")
	byPath := Args(spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5})
	byFD := Args(spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5, Workspace: 9, Mounts: []int{6, 7, 8}})
	w := spec.Workspace
	want := map[string][3]string{
		"workspace":   {"--bind-fd", "9", w},
		"data":        {"--bind-fd", "6", w + "/data"},
		"models/base": {"--ro-bind-fd", "7", w + "/models/base"},
		"escape":      {"--bind-fd", "8", w + "/escape"},
	}
	for _, m := range want {
		if indexPair(byFD, m[0], m[1], m[2]) < 0 {
			t.Errorf("no mount at %s from its handle: %q, want %q", m[2], byFD, m)
		}
	}
	if len(byFD) != len(byPath) {
		t.Errorf("binding by handle changed the argv's length: %d vs %d", len(byFD), len(byPath))
	}
	if i := slices.Index(byFD, "--bind-fd"); i < 0 || byFD[i+1] != "9" || byFD[i+2] != w {
		t.Errorf("the workspace is not the first bind, from its handle: %q", byFD)
	}
	for _, src := range []string{"/srv/data", "/srv/models", "/srv/evil"} {
		if slices.Contains(byFD, src) {
			t.Errorf("the source path %s is still in the argv", src)
		}
	}
}

// Open mode always gets a private /run (the host's holds its services'
// sockets), with the system roots that live there brought back.
func TestArgsOpenModePrivateRun(t *testing.T) {
	t.Parallel()
	host := debianHost
	host.Roots = append(slices.Clone(host.Roots), Root{Path: "/run/current-system", Symlink: "/nix/store/abc-nixos-system"})
	spec := baseSpec(backends.FsOpen)
	spec.Hidden = []string{"/run/user", "/run/docker.sock", "/home/ann"}
	host.Hidden = map[string]PathKind{"/run/user": Dir, "/run/docker.sock": File, "/home/ann": Dir}
	a := strings.Join(Args(spec, host, FDs{Seccomp: 3, Info: 4, Block: 5}), " ")
	for _, want := range []string{
		"--ro-bind / / --tmpfs /run --symlink /nix/store/abc-nixos-system /run/current-system --proc",
		"--tmpfs /home/ann",
	} {
		if !strings.Contains(a, want) {
			t.Errorf("argv lacks %q:\n%s", want, a)
		}
	}
	for _, not := range []string{"/run/user", "/run/docker.sock"} {
		if strings.Contains(a, not) {
			t.Errorf("argv masks %s inside the private /run:\n%s", not, a)
		}
	}
}

// The run's environment is set for the command only, after --clearenv,
// one --setenv per variable; bwrap's options travel through --args as NUL
// ended words, and a NUL in a value (which would pass options of its own)
// is refused.
func TestArgsEnvironmentAndArgsData(t *testing.T) {
	t.Parallel()
	spec := baseSpec(backends.FsStrict)
	flags := Flags(spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5})
	clear := slices.Index(flags, "--clearenv")
	if clear < 0 {
		t.Fatal("no --clearenv")
	}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		i := indexPair(flags, "--setenv", k, v)
		if i < clear {
			t.Errorf("%s is not set after --clearenv: %q", kv, flags)
		}
	}
	if got, want := Args(spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5}), append(append(slices.Clone(flags), "--"), Command(spec, FDs{Seccomp: 3, Info: 4, Block: 5})...); !slices.Equal(got, want) {
		t.Errorf("Args is not Flags, --, Command:\n%q\n%q", got, want)
	}
	data, err := ArgsData([]string{"--setenv", "A", "", "--chdir", "/w"})
	if err != nil || string(data) != "--setenv\x00A\x00\x00--chdir\x00/w\x00" {
		t.Errorf("ArgsData = %q, %v", data, err)
	}
	if _, err := ArgsData([]string{"--setenv", "A", "x\x00--bind\x00/\x00/y"}); err == nil {
		t.Error("a NUL in a value was accepted")
	}
}

// A masked interpreter gets /dev/null at its own path when that is in
// view and at every mount that shows it, after every bind; one out of
// view or gone gets nothing.
func TestArgsMasksEveryView(t *testing.T) {
	t.Parallel()
	w := baseSpec(backends.FsStrict).Workspace
	cases := map[string]struct{ want, not []string }{
		"masked_strict": {
			want: []string{"/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", w + "/syslib/x86_64-linux-gnu/libpython3.11.so.1.0"},
			not:  []string{"/home/ann/.pyenv/versions/3.12.1/bin/python3.12", "/usr/bin/gone"},
		},
		"masked_open": {
			want: []string{"/usr/bin/python3.11", "/home/ann/.pyenv/versions/3.12.1/bin/python3.12"},
			not:  []string{"/usr/bin/gone"},
		},
	}
	for name, c := range cases {
		a := Args(argsCase(t, name), debianHost, FDs{Seccomp: 3, Info: 4, Block: 5})
		lastBind := 0
		for i, o := range a {
			if o == "--bind" || o == "--ro-bind" || o == "--bind-fd" || o == "--ro-bind-fd" {
				if a[i+1] != "/dev/null" {
					lastBind = i
				}
			}
		}
		for _, p := range c.want {
			if i := indexPair(a, "--ro-bind", "/dev/null", p); i < lastBind {
				t.Errorf("%s: %s is not masked after every bind (at %d, last bind %d)", name, p, i, lastBind)
			}
		}
		for _, p := range c.not {
			if slices.Contains(a, p) {
				t.Errorf("%s: %s is masked, though it is out of view or gone", name, p)
			}
		}
	}
}

// A run with a terminal: the helper is bound in (or comes with the
// network plumbing) and takes the terminal's descriptor before the
// command; --new-session stays, and the seccomp filter with it.
func TestArgsTerminalGolden(t *testing.T) {
	t.Parallel()
	tty := baseSpec(backends.FsStrict)
	tty.TerminalFDs = []int{0, 1}
	tty.Helper = "/usr/lib/senclaw/senclaw-netfwd"
	ttyNet := baseSpec(backends.FsStrict)
	ttyNet.TerminalFDs = []int{0, 1, 2}
	ttyNet.Network = true
	ttyNet.Net = &backends.NetPlumbing{Dir: "/home/ann/.local/share/sc/net/s1", Forwarder: "/usr/lib/senclaw/senclaw-netfwd"}
	for _, tc := range []struct {
		name string
		spec *backends.Spec
	}{{"terminal", tty}, {"terminal_network_on", ttyNet}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := Args(tc.spec, debianHost, FDs{Seccomp: 3, Info: 4, Block: 5, Terminal: 6})
			for _, must := range []string{"--new-session", "--seccomp", "--tty-fd"} {
				if !slices.Contains(a, must) {
					t.Errorf("missing %s", must)
				}
			}
			got := strings.Join(a, "\n") + "\n"
			testutil.Golden(t, filepath.Join("testdata", tc.name+".golden"), got, *update)
		})
	}
}
