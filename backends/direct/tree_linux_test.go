package direct

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestNothingTheRunStartedOutlivesIt: a direct run that leaves processes
// behind the way daemons do (setsid, a double fork) ends when its command
// does, and takes them along, at its end and when killed, in a cgroup of
// its own (as root) and under the child subreaper; the enforcement says
// which held.
func TestNothingTheRunStartedOutlivesIt(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts Options
		kill bool
		held string
	}{
		{"reaper/exit", Options{Reaper: self, noCgroup: true}, false, "subreaper"},
		{"reaper/kill", Options{Reaper: self, noCgroup: true}, true, "subreaper"},
	}
	if _, err := newRunCgroup("probe-" + randomSuffix()); err == nil {
		cases = append(cases,
			struct {
				name string
				opts Options
				kill bool
				held string
			}{"cgroup/exit", Options{}, false, "cgroup"},
			struct {
				name string
				opts Options
				kill bool
				held string
			}{"cgroup/kill", Options{}, true, "cgroup"})
	} else if os.Geteuid() == 0 {
		t.Logf("no cgroup v2 here (%v): the cgroup cases are not run", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			mark := "outlive-" + randomSuffix()
			script := "setsid sh -c 'sleep 300; echo " + mark + "' & (setsid sh -c 'sleep 301; echo " + mark + "' &); echo started"
			if tc.kill {
				script += "; sleep 302"
			}
			var out testutil.SyncBuffer
			p, err := New(tc.opts).Start(context.Background(), &backends.Spec{
				RunID: "r" + randomSuffix(), Workspace: ws, Argv: []string{"/bin/sh", "-c", script},
				Env: []string{"PATH=/usr/bin:/bin", "MARK=" + mark}, Stdout: &out, Stderr: &out,
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.kill {
				testutil.WaitFor(t, 10*time.Second, "the tree to start", func() bool { return len(testutil.PidsWith(mark)) >= 2 && strings.Contains(out.String(), "started") })
				if err := p.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan struct{})
			go func() { p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("the run did not end: what it left behind holds it open: %v", testutil.PidsWith(mark))
			}
			if !strings.Contains(out.String(), "started") {
				t.Errorf("output %q", out.String())
			}
			testutil.WaitFor(t, 10*time.Second, "the tree to be gone", func() bool { return len(testutil.PidsWith(mark)) == 0 })
			if held := strings.Join(p.Enforcement().Limits, "; "); !strings.Contains(held, "processes: ") || !strings.Contains(held, tc.held) {
				t.Errorf("the enforcement says %q, want how the processes were ended (%s)", held, tc.held)
			}
		})
	}
}

// TestTheSubreaperGetsNoEnvironment: the subreaper is a host-side helper
// and starts with an empty environment; only the command gets the run's.
func TestTheSubreaperGetsNoEnvironment(t *testing.T) {
	t.Parallel()
	self, _ := os.Executable()
	var out, errOut bytes.Buffer
	p, err := New(Options{Reaper: self, noCgroup: true}).Start(context.Background(), &backends.Spec{
		Workspace: t.TempDir(), Argv: []string{"/bin/sh", "-c", `tr '\0' '\n' < /proc/$PPID/environ | wc -l; echo "$RUNVAR"`},
		Env: []string{"PATH=/usr/bin:/bin", "RUNVAR=for-the-command", "LD_PRELOAD=/nonexistent.so"}, Stdout: &out, Stderr: &errOut,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := p.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("%+v %v: %s%s", st, err, out.String(), errOut.String())
	}
	if got := strings.Fields(out.String()); len(got) != 2 || got[0] != "0" || got[1] != "for-the-command" {
		t.Fatalf("want 0 variables in the reaper's environment and the command's RUNVAR, got %q", out.String())
	}
}

func randomSuffix() string { return strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "") }

// TestSweepEndsWhatADeadEnginesRunsLeft: a run cgroup older than any run
// may last (its engine died: nobody killed the tree) is emptied and
// removed at the next start; a recent one, maybe another engine's run
// going on, is left alone.
func TestSweepEndsWhatADeadEnginesRunsLeft(t *testing.T) {
	if _, err := newRunCgroup("probe-" + randomSuffix()); err != nil {
		if os.Geteuid() == 0 && os.Getenv("CI") == "true" {
			t.Fatalf("a root engine must make run cgroups under CI: %v", err)
		}
		t.Skipf("no cgroup v2 here: %v", err)
	}
	start := func(id string) *runCgroup {
		cg, err := newRunCgroup(id)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", "-c", "setsid sh -c 'exec sleep 300' & true")
		fd, _ := syscall.Open(cg.dir, syscall.O_DIRECTORY|syscall.O_RDONLY, 0)
		defer syscall.Close(fd)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cg.kill(); cg.release() })
		return cg
	}
	old, recent := start("r-old-"+randomSuffix()), start("r-new-"+randomSuffix())
	past := time.Now().Add(-2 * staleAfter)
	if err := os.Chtimes(old.dir, past, past); err != nil {
		t.Fatal(err)
	}
	// What the dead run left: one process that left its session.
	testutil.WaitFor(t, 10*time.Second, "one process in each cgroup", func() bool { return len(old.pids()) == 1 && len(recent.pids()) == 1 })
	if n := New().Sweep(); n < 1 {
		t.Fatalf("Sweep removed %d cgroups", n)
	}
	if _, err := os.Stat(old.dir); !os.IsNotExist(err) {
		t.Fatalf("the stale cgroup is still there: %v", err)
	}
	if len(recent.pids()) != 1 {
		t.Fatal("Sweep touched a recent run")
	}
}
