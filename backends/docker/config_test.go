package docker

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenSpec is a sandbox as the engine resolves it on a Debian host.
func goldenSpec() *backends.Spec {
	return &backends.Spec{
		SandboxID: "s1",
		RunID:     "r1",
		Workspace: "/var/lib/senclaw/workspaces/s1",
		Argv:      []string{"python3", "/var/lib/senclaw/workspaces/s1/.runs/r1.py"},
		FsMode:    backends.FsStrict,
		Image:     "senclaw-test/busybox:latest",
		Limits:    backends.Limits{CPUs: 1.5, MemoryMB: 512, Pids: 256, DiskMB: 100},
		User:      &backends.Credential{UID: 65534, GID: 65534},
	}
}

func configCases() []struct {
	name string
	spec *backends.Spec
} {
	plumbing := &backends.NetPlumbing{Dir: "/var/lib/senclaw/net/s1", Forwarder: "/usr/lib/senclaw/senclaw-netfwd"}
	netOn := goldenSpec()
	netOn.Network = true
	netOn.Net = plumbing
	ports := goldenSpec()
	ports.Ports = backends.PortRules{Listen: []int{8080, 3000, 8080}, Connect: []int{443}}
	ports.Net = plumbing
	mounts := goldenSpec()
	mounts.Mounts = []backends.Mount{
		{Source: "/srv/models", Target: "models/base", ReadOnly: true},
		{Source: "/srv/data", Target: "data"},
	}
	defaults := goldenSpec()
	defaults.Limits = backends.Limits{}
	// An agent's project: its agents' and git's files are bound
	// read-only over themselves, in the workspace and in a mount.
	project := goldenSpec()
	project.Workspace = "/home/ann/code/app"
	project.Argv = []string{"sh", "-c", "true"}
	project.Mounts = []backends.Mount{{Source: "/home/ann/code/lib", Target: "vendor/lib"}}
	project.Protected = []string{"/home/ann/code/app/.git/config", "/home/ann/code/app/.claude", "/home/ann/code/lib/.vscode"}
	// A sandbox on another machine's engine: its workspace /work, a
	// copied read-only mount, the network over the relay.
	remote := goldenSpec()
	remote.Workspace = "/work"
	remote.Argv = []string{"python3", "/work/.runs/r1.py"}
	remote.Mounts = []backends.Mount{{Source: "/home/ann/data", Target: "data", ReadOnly: true, Copy: true}}
	remote.Network = true
	remote.Net = &backends.NetPlumbing{Forwarder: "/usr/lib/senclaw/senclaw-netfwd", Serve: func(net.Conn) {}}
	remoteOneShot := goldenSpec()
	remoteOneShot.Workspace = "/work"
	remoteOneShot.OneShot = true
	return []struct {
		name string
		spec *backends.Spec
	}{
		{"network_off", goldenSpec()},
		{"remote", remote},
		{"remote_oneshot", remoteOneShot},
		{"network_on", netOn},
		{"ports_listed", ports},
		{"mounts_rw_ro", mounts},
		{"default_limits", defaults},
		{"project_protected", project},
	}
}

var created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestContainerConfig_golden compares the create request (Config and
// HostConfig as JSON) with testdata/<case>.golden. The seccomp profile is
// replaced by its digest there; TestSeccompProfile_golden covers it.
func TestContainerConfig_golden(t *testing.T) {
	t.Parallel()
	prof, err := profile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range configCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := shapeOf(tc.spec, &Options{}, prof.Digest)
			if err != nil {
				t.Fatal(err)
			}
			remote := strings.HasPrefix(tc.name, "remote")
			if remote {
				if err := elsewhereShape(&s, tc.spec, "f0f0f0f0f0f0f0f0", "engine far"); err != nil {
					t.Fatal(err)
				}
			}
			cfg, host := containerConfig(s, labelsFor("uid0", kindSandbox, tc.spec.SandboxID, s, created), prof.JSON)
			if remote {
				for _, m := range host.Mounts {
					if m.Type == "bind" && m.Source != "/dev/null" {
						t.Errorf("a container elsewhere binds %s", m.Source)
					}
				}
			}
			if !strings.Contains(strings.Join(host.SecurityOpt, " "), `"defaultAction":"SCMP_ACT_ERRNO"`) {
				t.Errorf("the seccomp option does not carry the profile: %.80q", host.SecurityOpt)
			}
			for i, o := range host.SecurityOpt {
				if strings.HasPrefix(o, "seccomp=") {
					host.SecurityOpt[i] = "seccomp=<senclaw profile " + prof.Digest + ">"
				}
			}
			got, err := json.MarshalIndent(map[string]any{"Config": cfg, "HostConfig": host}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			checkGolden(t, filepath.Join("testdata", tc.name+".golden"), got)
			for _, bad := range []string{"0.0.0.0", "unconfined", `"Privileged": true`, `"HostIp": ""`, "CAP_SYS_ADMIN", `"User": "0`, `"NetworkMode": "host"`, `"PortBindings": {`, "ExposedPorts", `"PublishAllPorts": true`} {
				if bytes.Contains(got, []byte(bad)) {
					t.Errorf("the create config contains %q", bad)
				}
			}
			if host.NetworkMode != "none" {
				t.Errorf("network mode %q, want none", host.NetworkMode)
			}
			for _, must := range []string{`"ReadonlyRootfs": true`, `"no-new-privileges"`, `"Init": true`, `"ALL"`, `"/tmp": "rw,nosuid,nodev`} {
				if !bytes.Contains(got, []byte(must)) {
					t.Errorf("the create config lacks %q", must)
				}
			}
			if host.Memory == 0 || host.MemorySwap != host.Memory || host.PidsLimit == nil || *host.PidsLimit <= 0 {
				t.Errorf("memory %d, swap %d, pids %v: limits missing", host.Memory, host.MemorySwap, host.PidsLimit)
			}
		})
	}
}

// TestConfigHash_golden pins the hash of each case and proves it does not
// depend on the order of mounts and ports.
func TestConfigHash_golden(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	for _, tc := range configCases() {
		s, err := shapeOf(tc.spec, &Options{}, "fixed-digest")
		if err != nil {
			t.Fatal(err)
		}
		// The remote cases pin the hash a container elsewhere carries.
		if strings.HasPrefix(tc.name, "remote") {
			if err := elsewhereShape(&s, tc.spec, "f0f0f0f0f0f0f0f0", "engine far"); err != nil {
				t.Fatal(err)
			}
		}
		data, _ := json.Marshal(s)
		out.WriteString(tc.name + " " + s.hash() + " " + string(data) + "\n")
	}
	checkGolden(t, filepath.Join("testdata", "hashes.golden"), out.Bytes())

	a, b := goldenSpec(), goldenSpec()
	a.Mounts = []backends.Mount{{Source: "/a", Target: "a"}, {Source: "/b", Target: "b", ReadOnly: true}}
	b.Mounts = []backends.Mount{{Source: "/b/", Target: "./b", ReadOnly: true}, {Source: "/a", Target: "a/"}}
	a.Ports.Listen, b.Ports.Listen = []int{9000, 8000}, []int{8000, 9000, 8000}
	b.RunID, b.Argv, b.Env = "other", []string{"true"}, []string{"X=1"} // not part of the container
	ha, hb := mustShape(t, a).hash(), mustShape(t, b).hash()
	if ha != hb {
		t.Errorf("equivalent specs hash differently: %s vs %s", ha, hb)
	}
	// Port and domain rules apply live (the proxy reads them per
	// connection; each run's forwarder serves its listen ports): they
	// never make a container "needs recreate".
	b.Ports = backends.PortRules{Listen: []int{7000}, Connect: []int{443}, Loopback: []int{5432}, Domains: []string{"example.com"}}
	if mustShape(t, b).hash() != ha {
		t.Error("port or domain rules change the hash")
	}
	b.Limits.Pids++
	if mustShape(t, b).hash() == ha {
		t.Error("a changed pids limit does not change the hash")
	}
}

func mustShape(t *testing.T, spec *backends.Spec) shape {
	t.Helper()
	s, err := shapeOf(spec, &Options{}, "fixed-digest")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestShapeOf_refuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(*backends.Spec)
		want string
	}{
		{"mount_escapes", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: "/srv", Target: "../../etc"}} }, "without \"..\""},
		{"mount_absolute", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: "/srv", Target: "/etc"}} }, "relative path"},
		{"mount_on_work", func(s *backends.Spec) { s.Mounts = []backends.Mount{{Source: "/srv", Target: "."}} }, "relative path"},
		{"root_user", func(s *backends.Spec) { s.User = &backends.Credential{} }, "uid 0"},
		{"privileged_port", func(s *backends.Spec) { s.Ports.Listen = []int{80} }, "1024-65535"},
		{"no_image", func(s *backends.Spec) { s.Image = "" }, "docker pull"},
		{"relative_workspace", func(s *backends.Spec) { s.Workspace = "ws" }, "absolute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := goldenSpec()
			tc.edit(spec)
			_, err := shapeOf(spec, &Options{}, "d")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestPathMap(t *testing.T) {
	t.Parallel()
	spec := goldenSpec()
	spec.Mounts = []backends.Mount{{Source: "/var/lib/senclaw/workspaces/s1-data", Target: "data"}}
	m := newPathMap(mustShape(t, spec))
	ws := spec.Workspace
	got := m.argv([]string{"python3", ws + "/.runs/r1.py", ws, ws + "x", "/var/lib/senclaw/workspaces/s1-data/f", "-c", "print(1)"})
	want := []string{"python3", "/work/.runs/r1.py", "/work", ws + "x", "/work/data/f", "-c", "print(1)"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("argv: got %q, want %q", got, want)
	}
	env := m.env([]string{"HOME=" + ws, "TMPDIR=" + ws + "/.tmp", "PATH=/usr/bin:/bin", "EMPTY="})
	if strings.Join(env, " ") != "HOME=/work TMPDIR=/work/.tmp PATH=/usr/bin:/bin EMPTY=" {
		t.Errorf("env: got %q", env)
	}
}

// checkGolden compares got with the file, or rewrites it under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, firstDiff(string(want), string(got)))
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, g, w)
		}
	}
	return ""
}
