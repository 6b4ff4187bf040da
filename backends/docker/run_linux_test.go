package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestKill_keepsOutputAndKillsTree: the engine kills a run at its timeout;
// the output so far is kept and no process of the run survives, on this
// machine's daemon (host pids) and the remote way (kill inside).
func TestKill_keepsOutputAndKillsTree(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	for _, tc := range []struct {
		name   string
		inside bool
	}{{"host_pids", false}, {"kill_inside_container", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newTestBackend(t, func(o *Options) { o.inContainerKill = tc.inside })
			spec := newSpec(t, b, "/bin/sh", "-c", "sleep 300 & (sleep 301; true) & echo started; wait")
			var out testutil.SyncBuffer
			spec.Stdout = &out
			p, err := b.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			testutil.WaitFor(t, 10*time.Second, "\"started\" in the output", func() bool { return strings.Contains(out.String(), "started") })
			if !tc.inside && len(p.Pids()) < 3 {
				t.Errorf("Pids lists %v, want the shell and its two children", p.Pids())
			}
			begin := time.Now()
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			st, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(begin); took > 3*time.Second {
				t.Errorf("kill took %s", took)
			}
			if out.String() != "started\n" || st.Code != 137 || st.Signal != "killed" {
				t.Errorf("after kill: output %q, status %+v", out.String(), st)
			}
			if err := p.Kill(); err != nil {
				t.Errorf("a second kill: %v", err)
			}
			assertNoRunLeft(t, b, spec.SandboxID)
		})
	}
}

// TestKill_restartIsTheLastResort: when the run cannot be found inside the
// container (it removed its pid file), Kill restarts the container, says
// so, and the output is still kept.
func TestKill_restartIsTheLastResort(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, func(o *Options) { o.inContainerKill = true })
	spec := newSpec(t, b, "/bin/sh", "-c", "rm -f /tmp/.senclaw-*.pid; echo started; sleep 300")
	var out testutil.SyncBuffer
	spec.Stdout = &out
	p, err := b.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "\"started\" in the output", func() bool { return strings.Contains(out.String(), "started") })
	err = p.Kill()
	if err == nil || !strings.Contains(err.Error(), "container was restarted") {
		t.Fatalf("kill: %v", err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "started\n" || !strings.Contains(strings.Join(p.Enforcement().Missing, ";"), "container was restarted") {
		t.Fatalf("output %q, enforcement %+v", out.String(), p.Enforcement())
	}
	if r := run(t, b, spec, "echo", "again"); r.stdout != "again\n" {
		t.Fatalf("the sandbox after the restart: %q %q", r.stdout, r.stderr)
	}
}

// TestWait_killsLeftovers: a run that leaves a background process behind
// does not outlive Wait.
func TestWait_killsLeftovers(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "/bin/sh", "-c", "sleep 300 >/dev/null 2>&1 & echo bye")
	if r := run(t, b, spec); r.stdout != "bye\n" || r.status.Code != 0 {
		t.Fatalf("run: %q %+v", r.stdout, r.status)
	}
	assertNoRunLeft(t, b, spec.SandboxID)
}

func assertNoRunLeft(t *testing.T, b *Backend, sandboxID string) {
	t.Helper()
	procs, err := b.ContainerTop(context.Background(), sandboxID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if strings.Contains(p.Command, "sleep 30") {
			t.Errorf("a process of the run survived: %+v", p)
		}
	}
}

// TestQuota_fsize: no file grows past the disk quota.
func TestQuota_fsize(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "true")
	spec.Limits.DiskMB = 2
	r := run(t, b, spec, "/bin/sh", "-c", "dd if=/dev/zero of=/work/big bs=1M count=8 2>&1")
	fi, err := os.Stat(filepath.Join(spec.Workspace, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if r.status.Code == 0 || fi.Size() > 2<<20 {
		t.Fatalf("dd exit %d (%q), file %d bytes: the quota did not hold", r.status.Code, r.stdout, fi.Size())
	}
	if !strings.Contains(strings.Join(r.proc.Enforcement().Limits, ";"), "disk: fsize") {
		t.Errorf("enforcement does not name the disk limit: %v", r.proc.Enforcement().Limits)
	}
}

// TestRun_stdinArgvEnv: stdin reaches the run, host workspace paths in argv
// and HOME/TMPDIR are mapped to /work.
func TestRun_stdinArgvEnv(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "true")
	code := filepath.Join(spec.Workspace, ".runs", "r1.sh")
	if err := os.MkdirAll(filepath.Dir(code), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(code, []byte("echo \"$HOME $TMPDIR $0\"; cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.Env = append(spec.Env, "HOME="+spec.Workspace, "TMPDIR="+spec.Workspace+"/.tmp")
	spec.Stdin = strings.NewReader("from stdin\n")
	r := run(t, b, spec, "/bin/sh", code)
	if r.stdout != "/work /work/.tmp /work/.runs/r1.sh\nfrom stdin\n" {
		t.Fatalf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// TestOneShot_warmPool: a one-shot run takes a pooled container, sees the
// files the engine put in its workspace, writes into it, and its container
// is removed afterwards.
func TestOneShot_warmPool(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, func(o *Options) { o.PoolSize = 1 })
	spec := newSpec(t, b, "true")
	spec.OneShot = true
	if err := b.Warm(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(spec.Workspace, "code.sh"), []byte("echo from code; echo out > /work/written\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, b, spec, "/bin/sh", filepath.Join(spec.Workspace, "code.sh"))
	if r.stdout != "from code\n" || r.status.Code != 0 {
		t.Fatalf("one-shot run: %q %q %+v", r.stdout, r.stderr, r.status)
	}
	if data, _ := os.ReadFile(filepath.Join(spec.Workspace, "written")); string(data) != "out\n" {
		t.Fatalf("the workspace has %q", data)
	}
	if fi, err := os.Stat(spec.Workspace); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("workspace after the run: %v %v", fi, err)
	}
	if !strings.HasPrefix(containerNameOf(t, r.proc.ref.ID), "senclaw-pool-") {
		t.Errorf("the run did not use a pooled container")
	}
	testutil.WaitFor(t, 10*time.Second, "the pooled container to be removed", func() bool {
		_, err := inspectName(t, r.proc.ref.ID)
		return err != nil
	})
	if err := b.Warm(context.Background(), spec); err != nil {
		t.Fatalf("the pool was not refilled: %v", err)
	}
}

func containerNameOf(t *testing.T, id string) string {
	t.Helper()
	name, err := inspectName(t, id)
	if err != nil {
		return "(gone) " + err.Error()
	}
	return name
}

// TestInspector_statsTopKill covers the stats, process list and kill verbs.
func TestInspector_statsTopKill(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "/bin/sh", "-c", "sleep 300 & sleep 302 & echo up; wait")
	var out testutil.SyncBuffer
	spec.Stdout = &out
	p, err := b.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "\"up\" in the output", func() bool { return strings.Contains(out.String(), "up") })
	ctx := context.Background()
	st, err := b.ContainerStats(ctx, spec.SandboxID)
	if err != nil || st.MemoryBytes == 0 || st.Pids < 3 || st.MemoryLimit != 256<<20 {
		t.Fatalf("stats %+v, %v", st, err)
	}
	procs, err := b.ContainerTop(ctx, spec.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	for _, pr := range procs {
		if strings.Contains(pr.Command, "sleep 302") {
			one = pr.PID
		}
	}
	if one == 0 {
		t.Fatalf("top does not list the run: %+v", procs)
	}
	if err := b.KillProcesses(ctx, spec.SandboxID, []int{one}); err != nil {
		t.Fatal(err)
	}
	if err := b.KillProcesses(ctx, spec.SandboxID, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan backends.ExitStatus)
	go func() { s, _ := p.Wait(); done <- s }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("killing all processes did not end the run")
	}
	if s, _ := b.SandboxStatus(ctx, spec); s != backends.StatusRunning {
		t.Errorf("kill all stopped the container: %q", s)
	}
	if err := b.StopSandbox(ctx, spec.SandboxID); err != nil {
		t.Fatal(err)
	}
	if s, _ := b.SandboxStatus(ctx, spec); s != backends.StatusStopped {
		t.Errorf("after stop: %q", s)
	}
	if err := b.RemoveSandbox(ctx, spec.SandboxID); err != nil {
		t.Fatal(err)
	}
	if s, _ := b.SandboxStatus(ctx, spec); s != backends.StatusNone {
		t.Errorf("after remove: %q", s)
	}
}

// TestRunsLeaveNoSurvivor: what a run starts dies with it, even what
// left its tree the way daemons do (a new session, a double fork whose
// middle process exits at once), at its end and when it is killed at its
// timeout, on this machine's daemon (host pids) and the remote way (kill
// inside), while another run of the same sandbox keeps going.
func TestRunsLeaveNoSurvivor(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	escape := "setsid sh -c 'sleep 300' & (setsid sh -c 'sleep 301' &); sleep 0.2; echo started"
	for _, tc := range []struct {
		name   string
		inside bool
		kill   bool
	}{
		{"exit/host_pids", false, false},
		{"timeout/host_pids", false, true},
		{"exit/kill_inside_container", true, false},
		{"timeout/kill_inside_container", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newTestBackend(t, func(o *Options) { o.inContainerKill = tc.inside })
			spec := newSpec(t, b, "/bin/sh", "-c", "true")
			// A server of another run of the same sandbox stays up.
			other := *spec
			other.RunID, other.Argv = "r"+randomHex(3), []string{"/bin/sh", "-c", "exec sleep 299"}
			server, err := b.Start(context.Background(), &other)
			if err != nil {
				t.Fatal(err)
			}
			defer server.Kill()
			script := escape
			if tc.kill {
				script += "; sleep 302"
			}
			s := *spec
			s.RunID, s.Argv = "r"+randomHex(3), []string{"/bin/sh", "-c", script}
			var out testutil.SyncBuffer
			s.Stdout = &out
			p, err := b.Start(context.Background(), &s)
			if err != nil {
				t.Fatal(err)
			}
			testutil.WaitFor(t, 10*time.Second, "\"started\" in the output", func() bool { return strings.Contains(out.String(), "started") })
			if tc.kill {
				if err := p.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			procs, err := b.ContainerTop(context.Background(), spec.SandboxID)
			if err != nil {
				t.Fatal(err)
			}
			serving := false
			for _, pr := range procs {
				if strings.Contains(pr.Command, "sleep 30") {
					t.Errorf("a process of the run survived it: %+v", pr)
				}
				serving = serving || strings.Contains(pr.Command, "sleep 299")
			}
			if !serving {
				t.Errorf("the other run's server was killed too: %+v", procs)
			}
		})
	}
}
