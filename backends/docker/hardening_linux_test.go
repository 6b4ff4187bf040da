package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHardening_insideContainer proves from inside a default sandbox what
// a plain hardened `docker run` does not give: no uid 0, no io_uring, and
// the rest of the barrier.
func TestHardening_insideContainer(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "true")
	probe := sysprobePath(t)
	data, err := os.ReadFile(probe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(spec.Workspace, "sysprobe"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		script string
		want   string // in stdout
		code   int    // wanted exit code
	}{
		{"root_fs_read_only", "touch /etc/x 2>&1; touch /x 2>&1", "Read-only file system", 1},
		{"no_capabilities", "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status", "CapEff:\t0000000000000000", 0},
		{"bounding_set_empty", "grep CapBnd /proc/self/status", "CapBnd:\t0000000000000000", 0},
		{"not_root", "id -u; id -g", "65534\n65534", 0},
		{"no_new_privileges", "grep NoNewPrivs /proc/self/status", "NoNewPrivs:\t1", 0},
		{"seccomp_filter_on", "grep '^Seccomp:' /proc/self/status", "Seccomp:\t2", 0},
		{"io_uring_denied", "/work/sysprobe io_uring", "EPERM", 0},
		{"tiocsti_denied", "/work/sysprobe tiocsti", "EPERM", 0},
		{"tiocsti_high_bits_denied", "/work/sysprobe tiocsti_high", "EPERM", 0},
		{"other_ioctls_work", "/work/sysprobe fionread", "ok", 0},
		{"user_namespace_denied", "/work/sysprobe unshare_user", "EPERM", 0},
		{"keyctl_denied", "/work/sysprobe keyctl", "EPERM", 0},
		{"ptrace_denied", "/work/sysprobe ptrace", "EPERM", 0},
		{"no_network", "ls /sys/class/net; wget -q -T 2 -O- http://172.17.0.1/ 2>&1 || echo unreachable", "lo\n", 0},
		{"host_processes_invisible", "cat /proc/[0-9]*/comm | sort -u | tr '\\n' ' '", "docker-init", 0},
		{"workspace_is_work", "pwd; echo $HOME; echo hi > /work/from-inside && cat /work/from-inside", "/work\n/work\nhi", 0},
		{"tmp_is_private_tmpfs", "grep ' /tmp ' /proc/mounts", "tmpfs /tmp tmpfs rw,nosuid,nodev", 0},
		{"pids_limited", "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max", "128", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, b, spec, "/bin/sh", "-c", tc.script)
			if !strings.Contains(r.stdout, tc.want) || r.status.Code != tc.code {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and %q", r.status.Code, r.stdout, r.stderr, tc.code, tc.want)
			}
			switch tc.name {
			case "host_processes_invisible":
				for _, host := range []string{"dockerd", "containerd", "go"} {
					if strings.Contains(" "+r.stdout, " "+host+" ") {
						t.Errorf("a host process %q is visible: %s", host, r.stdout)
					}
				}
			case "no_network":
				if strings.TrimSpace(strings.Split(r.stdout, "\n")[0]) != "lo" || !strings.Contains(r.stdout, "unreachable") {
					t.Errorf("the network is not off: %q", r.stdout)
				}
			case "workspace_is_work":
				if got, _ := os.ReadFile(filepath.Join(spec.Workspace, "from-inside")); string(got) != "hi\n" {
					t.Errorf("the host workspace has %q", got)
				}
			}
		})
	}
}

// TestLabels_andHardenedInspect checks the labels and what the daemon
// really applied.
func TestLabels_andHardenedInspect(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "true")
	run(t, b, spec)
	ins := inspectRaw(t, containerName(spec.SandboxID))
	prof, _ := profile()
	s, _ := shapeOf(spec, &b.opts, prof.Digest)
	l := ins.Config.Labels
	if l[labelSandbox] != spec.SandboxID || l[labelHash] != s.hash() || l[labelKind] != kindSandbox || l[labelCreated] == "" {
		t.Errorf("labels: %v", l)
	}
	h := ins.HostConfig
	if !h.ReadonlyRootfs || h.Privileged || h.NetworkMode != "none" || *h.Init != true || h.MemorySwap != h.Memory || len(h.CapDrop) != 1 {
		t.Errorf("host config not hardened: %+v", h)
	}
	if !strings.Contains(strings.Join(h.SecurityOpt, ","), "no-new-privileges") || strings.Contains(strings.Join(h.SecurityOpt, ","), "unconfined") {
		t.Errorf("security options: %.200q", h.SecurityOpt)
	}
	if ins.Config.User != "65534:65534" || ins.Name != "/senclaw-"+spec.SandboxID {
		t.Errorf("user %q, name %q", ins.Config.User, ins.Name)
	}
}
