package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/docker"
	"github.com/senclaw/sandbox/internal/testutil"
)

// dockerEngine is an engine with the Docker backend as main builds it
// (a warm one-shot pool in the data dir), on containers labelled with an
// owner of its own so that containersOf sees only this test's.
func dockerEngine(t *testing.T, edit func(*docker.Options), engineOpts ...engineOpt) (*Engine, string) {
	t.Helper()
	root := testDir(t)
	owner := "senclaw-test-" + randomHex(4)
	opts := docker.Options{DefaultImage: dockerTestImage, Owner: owner, PoolDir: filepath.Join(root, "data", "docker-pool")}
	if edit != nil {
		edit(&opts)
	}
	b := docker.New(opts)
	if c := b.Probe(context.Background()); !c.Usable() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker is required under CI: %s", c.Reason)
		}
		t.Skipf("docker: %s", c.Reason)
	}
	t.Cleanup(func() {
		// Whatever a failing test left behind, and only this test's.
		if ids := containersOf(t, owner, ""); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	e := newTestEngine(t, []backends.Backend{b}, append([]engineOpt{func(o *Options) { o.DataDir = filepath.Join(root, "data") }}, engineOpts...)...)
	s := e.Settings()
	s.DefaultImage = dockerTestImage
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	return e, owner
}

// containersOf lists, with the docker CLI, the names of owner's
// containers of kind ("" for every kind), running or not.
func containersOf(t *testing.T, owner, kind string) []string {
	t.Helper()
	args := []string{"ps", "-a", "--filter", "label=senclaw.owner=" + owner, "--format", "{{.Names}}"}
	if kind != "" {
		args = append(args, "--filter", "label=senclaw.kind="+kind)
	}
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

// waitSettled waits until owner has no one-shot container left and no
// more pooled ones than the pool holds (2): a container a run took from
// the pool keeps its "pool" label, so one left behind shows as a third.
func waitSettled(t *testing.T, owner, after string) {
	t.Helper()
	waitSettledPools(t, owner, after, 2)
}

// waitSettledPools is waitSettled when one-shots of several settings
// made several pools: at most most pooled containers.
func waitSettledPools(t *testing.T, owner, after string, most int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		oneShots, pooled := containersOf(t, owner, "oneshot"), containersOf(t, owner, "pool")
		if len(oneShots) == 0 && len(pooled) <= most {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, containers are still there: one-shot %v, pool %v", after, oneShots, pooled)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// survivor is a shell command that leaves a process behind the way a
// daemon does (a new session, its parent gone), marked so that
// marked can find it on this machine.
func survivor(mark string) string {
	return `setsid sh -c 'while :; do echo ` + mark + ` >> alive; sleep 1; done' & (setsid sh -c 'sleep 300; echo ` + mark + `' &) ; echo started`
}

// waitNoneMarked waits until no process holds mark.
func waitNoneMarked(t *testing.T, mark, after string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(testutil.PidsWith(mark)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after %s, processes the run started are still alive: %v", after, testutil.PidsWith(mark))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDockerOneShotsLeaveNoContainer: `senclaw run --backend docker` goes
// through the backend's one-shot path (the warm pool), and its container
// is gone after the run however it ended: exit, timeout, the caller
// going away, the disk quota, a refusal, and the engine stopping, which
// also removes the pool. Nothing the run started (a new session, a double fork) outlives
// it.
func TestDockerOneShotsLeaveNoContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: Docker one-shots ended every way there is (about 13 s); make test-go runs it")
	}
	t.Parallel()
	e, owner := dockerEngine(t, nil)
	docker := SandboxConfig{Backend: ptr("docker")}
	ctx := context.Background()

	t.Run("exit", func(t *testing.T) {
		mark := "exit-" + randomHex(4)
		res, err := e.RunOnce(ctx, docker, RunRequest{Command: survivor(mark)})
		if err != nil || !res.Record.OK() || res.Record.Isolation != "docker" {
			t.Fatalf("run: %v %+v", err, res.Record)
		}
		waitSettled(t, owner, "a run that exited")
		waitNoneMarked(t, mark, "a run that exited")
	})
	t.Run("pooled", func(t *testing.T) {
		// The first run filled the pool; the next one takes from it.
		var pooled []string
		deadline := time.Now().Add(60 * time.Second)
		for len(pooled) < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("the pool holds %v after a one-shot run: the one-shot path was not taken", pooled)
			}
			time.Sleep(100 * time.Millisecond)
			pooled = containersOf(t, owner, "pool")
		}
		res, err := e.RunOnce(ctx, docker, RunRequest{Command: "true"})
		if err != nil || !res.Record.OK() {
			t.Fatalf("run: %v %+v", err, res.Record)
		}
		waitSettled(t, owner, "a pooled run")
		now := strings.Join(containersOf(t, owner, ""), " ")
		if strings.Contains(now, pooled[0]) && strings.Contains(now, pooled[1]) {
			t.Errorf("the run took neither pooled container %v (now %s)", pooled, now)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		mark := "timeout-" + randomHex(4)
		res, err := e.RunOnce(ctx, SandboxConfig{Backend: ptr("docker"), TimeoutMs: ptr(2000)}, RunRequest{Command: survivor(mark) + "; sleep 60"})
		if err != nil || !res.Record.TimedOut {
			t.Fatalf("run: %v %+v", err, res.Record)
		}
		waitSettled(t, owner, "a timeout")
		waitNoneMarked(t, mark, "a timeout")
	})
	t.Run("kill", func(t *testing.T) {
		mark := "kill-" + randomHex(4)
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			deadline := time.Now().Add(30 * time.Second)
			for len(testutil.PidsWith(mark)) == 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			cancel()
		}()
		res, err := e.RunOnce(cctx, docker, RunRequest{Command: survivor(mark) + "; sleep 60"})
		if err != nil || !strings.Contains(res.Record.Killed, "cancelled") {
			t.Fatalf("run: %v %+v", err, res.Record)
		}
		waitSettled(t, owner, "a cancelled run")
		waitNoneMarked(t, mark, "a cancelled run")
	})
	t.Run("refusal", func(t *testing.T) {
		res, err := e.RunOnce(ctx, SandboxConfig{Backend: ptr("docker"), Image: ptr("senclaw-test/absent:none")}, RunRequest{Command: "true"})
		if !IsRefused(err) || !strings.HasPrefix(res.Record.Isolation, "refused") {
			t.Fatalf("run: %v %+v", err, res.Record)
		}
		waitSettled(t, owner, "a refusal")
	})
	t.Run("quota", func(t *testing.T) {
		// This engine makes no hard quotas: the watchdog kills the run.
		res, err := e.RunOnce(ctx, SandboxConfig{Backend: ptr("docker"), DiskMB: ptr(16), TimeoutMs: ptr(60000)}, RunRequest{Command: quotaCases[1].script + "; sleep 60"})
		if err != nil || !strings.Contains(res.Record.Killed, "disk quota") {
			t.Fatalf("run: %v %+v", err, res.Record)
		}
		waitSettledPools(t, owner, "a run killed past its disk quota", 4) // two shapes: two pools
	})
	t.Run("engine_stop", func(t *testing.T) {
		mark := "stop-" + randomHex(4)
		res, err := e.RunOnce(ctx, docker, RunRequest{Command: survivor(mark) + "; sleep 300", Background: true})
		if err != nil || res.Record.State != "running" {
			t.Fatalf("run: %v %+v", err, res.Record)
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(testutil.PidsWith(mark)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the background run did not start its processes")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		// Close waits for the removals: nothing is left, pool included.
		if left := containersOf(t, owner, ""); len(left) > 0 {
			t.Fatalf("after the engine stopped: %v", left)
		}
		waitNoneMarked(t, mark, "the engine stopped")
	})
}
