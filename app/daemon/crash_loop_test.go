package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/api"
	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/store"
)

// crashLoopRuns is the length of the SIGKILL loop.
const crashLoopRuns = 200

// TestSIGKILLLeavesNothingBehind: a real `senclaw serve` is
// killed with SIGKILL at random points of a loop of 200 mixed runs
// (one-shot, persistent, background, traced, Docker), four at a time.
// After each kill the store opens and passes tx.Check; after the restart
// every run is finished or marked killed, and nothing of this engine is
// left: no process, no run cgroup (those of the persistent sandbox's
// ready starts the kills left included), no container from before, no
// one-shot workspace or mount. The next runs work. Only this test's engine's
// things are looked at (its data dir, its run ids, its Docker owner
// label): other engines run on this machine.
func TestSIGKILLLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a real daemon SIGKILLed in a loop (about 27 s); make test-go runs it")
	}
	t.Parallel()
	requireTools(t, "bwrap", "strace")
	requireDockerCLI(t)
	d := buildDaemon(t)
	t.Cleanup(func() {
		if left := d.containers(""); len(left) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, left...)...).Run()
		}
	})
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	marker := fmt.Sprintf("sigkill-loop-%x", seed)
	ctx := context.Background()

	var persistent string
	var readyLeft []string // the run ids of the ready starts the last kill left
	readyKilled := 0
	replied := map[string]bool{} // run ids whose caller got the end of the run
	var mu sync.Mutex
	kills := 0
	for next := 0; next < crashLoopRuns; {
		began := time.Now()
		d.start()
		restarted := time.Now()
		c := client.DialSocket(apitype.SocketPath(filepath.Join(filepath.Dir(d.data), "run", "senclaw")))
		if persistent == "" {
			sb, err := c.Create(ctx, app.SandboxConfig{Name: ptrTo("crash-loop")})
			if err != nil {
				t.Fatal(err)
			}
			persistent = sb.Sandbox.ID
		} else {
			checkNothingLeft(t, d, c, began, restarted, persistent, marker)
			for _, id := range readyLeft {
				if left := runCgroups(id); len(left) > 0 {
					t.Errorf("the persistent sandbox's ready start %s, left by the kill, left cgroups: %v", id, left)
				}
			}
		}
		end := min(next+20+rng.Intn(30), crashLoopRuns)
		kill := end < crashLoopRuns
		var issued atomic.Int64
		issued.Store(int64(next))
		var killed atomic.Bool
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(issued.Add(1) - 1)
					if i >= end {
						return
					}
					id, err := mixedRun(ctx, c, i, persistent, marker)
					switch {
					case err == nil:
						mu.Lock()
						replied[id] = true
						mu.Unlock()
					case killed.Load():
						return
					default:
						t.Errorf("run %d: %v", i, err)
					}
				}
			}()
		}
		if kill {
			// Somewhere among the last runs of the round, with runs going.
			for int(issued.Load()) < end-2-rng.Intn(4) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(time.Duration(rng.Intn(40)) * time.Millisecond)
			killed.Store(true)
			if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			kills++
		}
		wg.Wait()
		if kill {
			d.stopped()
			checkStoreFile(t, d.data)
			readyLeft = readyStartsOf(t, d)
			readyKilled += len(readyLeft)
		} else {
			checkNothingLeftAtTheEnd(t, d, c, persistent, replied)
		}
		next = end
	}
	if kills < 3 {
		t.Fatalf("the loop killed the engine only %d times", kills)
	}
	if readyKilled == 0 {
		t.Error("no kill came while the persistent sandbox had a ready start")
	}
	t.Logf("%d runs, %d SIGKILLs, %d replies", crashLoopRuns, kills, len(replied))
}

func ptrTo[T any](v T) *T { return &v }

// mixedRun runs the i-th run of the loop: one-shot, persistent,
// background, traced or Docker. It returns the run's id once its caller
// has its end (a background run: its start).
func mixedRun(ctx context.Context, c *client.Client, i int, persistent, marker string) (string, error) {
	cmd := "echo " + marker + " " + strconv.Itoa(i)
	var rep *api.RunReply
	var err error
	switch i % 10 {
	case 0, 1, 2:
		rep, err = c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: cmd + "; echo x > f; cat f"}}, nil)
	case 3, 4:
		rep, err = c.Exec(ctx, persistent, client.RunBody{Command: cmd + "; sleep 0.05"}, nil)
	case 5:
		rep, err = c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: cmd + "; sleep 3", Background: true}}, nil)
	case 6:
		rep, err = c.Exec(ctx, persistent, client.RunBody{Command: cmd + "; sleep 3", Background: true}, nil)
	case 7, 8:
		rep, err = c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: cmd + "; cat /etc/hostname > /dev/null", Trace: true}}, nil)
	default:
		rep, err = c.RunOnce(ctx, client.RunOnceBody{RunBody: client.RunBody{Command: cmd}, Sandbox: app.SandboxConfig{Backend: ptrTo("docker"), Image: ptrTo("senclaw-test/busybox:latest")}}, nil)
	}
	if err != nil {
		return "", err
	}
	if rep.Run.State == "done" && !rep.OK {
		return rep.Run.ID, fmt.Errorf("failed: %+v", rep.Run)
	}
	return rep.Run.ID, nil
}

// checkStoreFile opens the store a killed engine left: it must open and
// pass bbolt's check.
func checkStoreFile(t *testing.T, data string) {
	t.Helper()
	s, err := store.Open(filepath.Join(data, "senclaw.db"), store.Options{})
	if err != nil {
		t.Fatalf("the store a SIGKILL left does not open: %v", err)
	}
	defer s.Close()
	if p := s.Check(); len(p) > 0 {
		t.Fatalf("the store a SIGKILL left fails its check: %v", p)
	}
}

// checkNothingLeft checks a restarted engine before any new run: every
// run finished or marked killed, and nothing of the runs before left.
func checkNothingLeft(t *testing.T, d *daemonProcess, c *client.Client, began, restarted time.Time, persistent, marker string) {
	t.Helper()
	ctx := context.Background()
	runs, err := c.Runs(ctx, "", 5000)
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, r := range runs {
		if r.State != "done" {
			t.Errorf("run %s is %q after a restart", r.ID, r.State)
		}
		if strings.HasPrefix(r.Killed, "the engine stopped while the run was going") {
			killed++
		}
		if left := runCgroups(r.ID); len(left) > 0 {
			t.Errorf("run %s left cgroups: %v", r.ID, left)
		}
		if r.AheadID != "" {
			if left := runCgroups(r.AheadID); len(left) > 0 {
				t.Errorf("run %s, in a sandbox made ahead as %s, left cgroups: %v", r.ID, r.AheadID, left)
			}
		}
	}
	if killed == 0 {
		t.Error("a SIGKILL with runs going left no killed record")
	}
	entries, _ := os.ReadDir(filepath.Join(d.data, "workspaces"))
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.ModTime().After(began) {
			continue // a one-shot sandbox the new engine made ahead
		}
		if e.Name() != persistent {
			var of []string
			for _, r := range runs {
				if r.SandboxID == e.Name() {
					of = append(of, fmt.Sprintf("%+v", r))
				}
			}
			t.Errorf("a workspace no sandbox owns is left: %s (runs: %v)", e.Name(), of)
		}
	}
	// What the engine killed at its start takes a moment to go.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		procs := processesOf(filepath.Dir(d.data), marker, d.cmd.Process.Pid)
		if len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of the killed engine are left: %v", procs)
			break
		}
	}
	// The Docker backend reconciles in the background: wait for it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		old := containersBefore(t, d, restarted)
		if len(old) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers of the killed engine are left: %v", old)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A one-shot's tmpfs, or a pool workspace of a container that is gone.
	current := map[string]bool{filepath.Join(d.data, "workspaces", persistent): true}
	for _, name := range d.containers("") {
		current[filepath.Join(d.data, "docker-pool", name)] = true
	}
	for _, m := range d.mounts() {
		if fi, err := os.Stat(m); err == nil && fi.ModTime().After(began) && filepath.Dir(m) == filepath.Join(d.data, "workspaces") {
			continue // the tmpfs of a one-shot sandbox the new engine made ahead
		}
		if !current[m] {
			t.Errorf("a mount is left: %s", m)
		}
	}
}

// checkNothingLeftAtTheEnd stops the engine gracefully after the loop's
// last runs: every reply's run is stored, runs after the loop work, and
// no container, process or one-shot workspace is left.
func checkNothingLeftAtTheEnd(t *testing.T, d *daemonProcess, c *client.Client, persistent string, replied map[string]bool) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		if _, err := mixedRun(ctx, c, i, persistent, "after-the-loop"); err != nil {
			t.Errorf("a run after the loop (%d): %v", i, err)
		}
	}
	runs, err := c.Runs(ctx, "", 5000)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, r := range runs {
		stored[r.ID] = true
	}
	for id := range replied {
		if !stored[id] {
			t.Errorf("run %s answered its caller but has no record", id)
		}
	}
	if code, out := d.cli("stop"); code != 0 {
		t.Fatalf("senclaw stop: %d %s", code, out)
	}
	d.stopped()
	checkStoreFile(t, d.data)
	if left := aheadEntries(t, d); len(left) > 0 {
		t.Errorf("sandboxes made ahead or ready starts on record after the stop: %v", left)
	}
	if left := d.containers(""); len(left) > 0 {
		t.Errorf("containers left after the stop: %v", left)
	}
	entries, _ := os.ReadDir(filepath.Join(d.data, "workspaces"))
	if len(entries) != 1 {
		t.Errorf("workspaces left after the stop: %d, want only the persistent sandbox's", len(entries))
	}
}

// readyStartsOf reads, from the store of a daemon that is not running,
// the run ids of the persistent sandboxes' ready starts it had.
func readyStartsOf(t *testing.T, d *daemonProcess) []string {
	t.Helper()
	s, err := store.Open(filepath.Join(d.data, "senclaw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []string
	err = s.EachAhead(func(_ string, data []byte) error {
		var ent struct {
			RunID   string `json:"runId"`
			Sandbox string `json:"sandbox"`
		}
		if err := json.Unmarshal(data, &ent); err != nil {
			return err
		}
		if ent.Sandbox != "" {
			out = append(out, ent.RunID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runCgroups finds the cgroups of run id, under every place the engine's
// backends make them (bwrap and Landlock: senclaw/, direct:
// senclaw-direct/; cgroup v2 and v1).
func runCgroups(id string) []string {
	var out []string
	for _, pattern := range []string{"senclaw/", "senclaw/*/", "senclaw-direct/", "*/senclaw/", "*/senclaw/*/"} {
		found, _ := filepath.Glob("/sys/fs/cgroup/" + pattern + id)
		out = append(out, found...)
	}
	return out
}

// processesOf lists the processes whose command line names root (this
// test's dirs) or marker (the loop's commands), but daemon.
func processesOf(root, marker string, daemon int) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == daemon || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(line, root) || strings.Contains(line, marker) {
			st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
			wc, _ := os.ReadFile("/proc/" + e.Name() + "/wchan")
			fds, _ := os.ReadDir("/proc/" + e.Name() + "/fd")
			var links []string
			for _, f := range fds {
				l, _ := os.Readlink("/proc/" + e.Name() + "/fd/" + f.Name())
				links = append(links, f.Name()+"="+l)
			}
			out = append(out, e.Name()+" ("+string(st)+") wchan="+string(wc)+" fds="+strings.Join(links, ",")+": "+line)
		}
	}
	return out
}

// containersBefore lists the daemon's containers made before t.
func containersBefore(t *testing.T, d *daemonProcess, before time.Time) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label=senclaw.owner="+DockerOwner(d.data), "--format", `{{.Names}} {{.Label "senclaw.created"}}`).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	var old []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, created, _ := strings.Cut(line, " ")
		at, err := time.Parse(time.RFC3339Nano, created)
		if name != "" && (err != nil || at.Before(before)) {
			old = append(old, name)
		}
	}
	return old
}
