package direct

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

func TestMain(m *testing.M) {
	// The test binary is the subreaper of the runs that use one, and the
	// envexec launcher of traced runs.
	testutil.Main(m)
}

// A traced direct run's command gets exactly its environment, while
// strace (root, for a root engine) starts with the fixed helper one: a
// library the run names in LD_PRELOAD loads into the command only, and
// no value of the environment is on any command line.
func TestTracedRunsEnvironmentReachesOnlyTheCommand(t *testing.T) {
	t.Parallel()
	requireTracer(t)
	ws := testutil.SandboxDir(t, "senclaw-direct-")
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	lib := testutil.PlantLibrary(t, ws, "plant.so")
	env := []string{"PATH=/usr/bin:/bin", "LD_PRELOAD=" + lib.Path, "API_KEY=sk-secret-value-42"}
	var user *backends.Credential
	if os.Geteuid() == 0 {
		user = &backends.Credential{UID: 65534, GID: 65534}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	var out strings.Builder
	p, err := New(Options{Launcher: testutil.Launcher(t)}).Start(context.Background(), &backends.Spec{
		Workspace: ws,
		Argv:      []string{"/bin/sh", "-c", "read x; exec /usr/bin/env"},
		Env:       env,
		User:      user,
		Stdin:     pr,
		Stdout:    &out,
		Trace:     func(backends.TraceEvent) {},
	})
	pr.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	// Every process of the run, while it waits: strace, the command.
	var cmdlines []string
	deadline := time.Now().Add(20 * time.Second)
	for len(cmdlines) < 2 && time.Now().Before(deadline) {
		cmdlines = cmdlines[:0]
		for _, pid := range append([]int{p.Pid()}, p.Pids()...) {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && len(b) > 0 {
				cmdlines = append(cmdlines, strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	pw.Close()
	st, err := p.Wait()
	if err != nil || st.Code != 0 {
		t.Fatalf("status %+v %v", st, err)
	}
	for _, c := range cmdlines {
		if strings.Contains(c, "sk-secret-value-42") || strings.Contains(c, "LD_PRELOAD") {
			t.Errorf("the run's environment is on a command line: %q", c)
		}
	}
	got := slices.DeleteFunc(strings.Fields(out.String()), func(s string) bool { return strings.HasPrefix(s, "PWD=") }) // sh's
	if !slices.Equal(got, env) {
		t.Errorf("the command's environment is %q, want %q", got, env)
	}
	var inCommand bool
	for _, load := range lib.Loads(t) {
		root := strings.HasPrefix(load, "uid=0 ") && user != nil
		if (strings.HasSuffix(load, " comm=env") || strings.HasSuffix(load, " comm=sh")) && !root {
			inCommand = true
			continue
		}
		t.Errorf("the planted library loaded outside the command: %q", load)
	}
	if !inCommand {
		t.Error("the planted library did not load in the command: LD_PRELOAD did not reach it")
	}
}
