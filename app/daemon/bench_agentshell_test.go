package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/benchtest"
)

// TestBenchAgentShellStart times whole processes, interleaved in one run:
// raw bwrap with the binds of the agent shell's Disk read mode (strict:
// the system folders; open: the root read-only with private /run, /tmp,
// home and senclaw's dirs), the project writable, senclaw agent-shell -c
// true through a real daemon with the switch on, and senclaw run -- true;
// strict and open with the agent network off, open with it on (the
// in-sandbox forwarder then starts before the command). It prints the medians and the
// ratios to raw bwrap (target: agent-shell at most 2.0x; 1.3x with the
// project's sandbox kept ready, which the network keeps from being). Each
// is measured with readyIdleMinutes 0 (every command starts its own
// sandbox) and with the default (a command takes the one started ahead
// after the last). `make bench` runs it; it is skipped otherwise.
func TestBenchAgentShellStart(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	d := startDaemon(t)
	d.setAgentShell(t, true)
	project := d.dir(t, "bench-project")
	bwrapPath, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	ns := []string{"--die-with-parent", "--new-session", "--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net"}
	tail := []string{"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", project, project, "--chdir", project, "--", "/bin/sh", "-c", "true"}
	// The binds of each Disk read mode, as the engine gives them.
	binds := map[string][]string{
		"strict": {"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--ro-bind", "/etc", "/etc", "--ro-bind", "/opt", "/opt"},
		"open":   {"--ro-bind", "/", "/", "--tmpfs", "/run", "--tmpfs", d.home, "--tmpfs", filepath.Join(d.root, "data"), "--tmpfs", filepath.Join(d.root, "config"), "--tmpfs", filepath.Join(d.root, "run")},
	}
	process := func(argv ...string) func() error {
		once := func() error {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir, cmd.Env = project, d.env
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if argv[0] == bwrapPath {
				cmd.Env = []string{"PATH=/usr/bin:/bin"}
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				if os.Geteuid() == 0 {
					cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
				}
			}
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%v: %v %s", argv, err, out.String())
			}
			return nil
		}
		return func() error {
			// Raw bwrap copying the whole root meets the one-shots'
			// tmpfs workspaces going away as the engine's bwrap does,
			// and is started again as the engine's is (setupTries).
			err := once()
			for try := 1; try < 3 && err != nil && strings.Contains(err.Error(), "Unable to apply mount flags: remount"); try++ {
				err = once()
			}
			return err
		}
	}
	setPolicy := func(mode string, network bool) {
		p, err := d.c.Policy(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		p.ExecNetwork, p.ExecFsMode = network, backends.FsMode(mode)
		if _, err := d.c.SetPolicy(t.Context(), *p); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		mode    string
		network bool
		ready   int
	}{{"strict", false, 0}, {"strict", false, 5}, {"open", false, 0}, {"open", false, 5}, {"open", true, 5}} {
		setPolicy(c.mode, c.network)
		if _, err := d.c.SetSettings(t.Context(), map[string]any{"readyIdleMinutes": c.ready}); err != nil {
			t.Fatal(err)
		}
		raw := append(append(append([]string{bwrapPath}, ns...), binds[c.mode]...), tail...)
		kinds := []struct {
			name string
			run  func() error
			took []time.Duration
		}{
			{name: "raw bwrap", run: process(raw...)},
			{name: "senclaw agent-shell -c true", run: process(d.bin, "agent-shell", "-c", "true")},
			{name: "senclaw run -- true", run: process(d.bin, "run", "--", "true")},
		}
		for i := 0; i < 45; i++ {
			for k := range kinds {
				start := time.Now()
				if err := kinds[k].run(); err != nil {
					t.Fatal(err)
				}
				if i >= 5 {
					kinds[k].took = append(kinds[k].took, time.Since(start))
				}
			}
		}
		base := benchtest.Median(kinds[0].took)
		for _, k := range kinds[1:] {
			m := benchtest.Median(k.took)
			fmt.Printf("BENCH whole process, Disk read %s, agent network %v, readyIdleMinutes %d: %s %v, raw bwrap %v, ratio %.2fx (target <= 2.0x)\n", c.mode, c.network, c.ready, k.name, m, base, float64(m)/float64(base))
		}
	}
}
