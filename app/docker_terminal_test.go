//go:build linux

package app

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDockerShellGetsATerminal: an attached run in a
// Docker sandbox gets a terminal as docker exec -it does (made by the
// daemon, relayed by the engine's): typed input reaches it, its size is
// the asked one from the first instant (a daemon before API 1.42 sets it
// only after the start: the size is set inside first), a resize reaches
// it as SIGWINCH, and its output comes
// back once (the engine's side is raw: no second echo).
func TestDockerShellGetsATerminal(t *testing.T) {
	t.Parallel()
	e, _ := dockerEngine(t, nil)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("docker")})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Delete(ctx, sb.ID, true)
	stdinR, stdinW := io.Pipe()
	control := make(chan Control, 4)
	out := &lockedBuffer{}
	started := make(chan RunRecord, 1)
	script := `test -t 0 && echo stdin-tty; test -t 1 && echo stdout-tty; test -t 2 && echo stderr-tty
stty size; echo prompt; read line; echo "got $line"
trap 'stty size; exit 0' WINCH; echo ready; while :; do sleep 0.05; done`
	go func() {
		<-started
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), "prompt") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		io.WriteString(stdinW, "typed\r")
		for !strings.Contains(out.String(), "ready") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		control <- Control{Cols: 100, Rows: 30}
	}()
	att := &Attachment{Stdin: stdinR, Terminal: &TerminalRequest{Cols: 80, Rows: 24, FDs: []int{0, 1, 2}}, Control: control,
		Started: func(r RunRecord) { started <- r }}
	res, err := e.Exec(ctx, sb.ID, RunRequest{Command: script, Attach: att, Stdout: out, TimeoutMs: 30000})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out.String(), "\r\n", "\n")
	if !res.Record.Terminal || !res.Record.OK() || res.Record.Isolation != "docker" {
		t.Fatalf("record %+v\nout %q", res.Record, got)
	}
	for _, want := range []string{"stdin-tty\n", "stdout-tty\n", "stderr-tty\n", "24 80\n", "got typed\n", "30 100\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal's output %q lacks %q", got, want)
		}
	}
	if n := strings.Count(got, "typed"); n != 2 { // the container's echo, and "got typed"
		t.Errorf("typed input seen %d times in %q: echoed by both terminals?", n, got)
	}
}

// TestDockerShellTimeoutLeavesNothing: an attached Docker run with a
// terminal that outlives its timeout, with a person typing at it and its
// command printing without end, is killed in time, and the engine keeps
// none of the run's descriptors (its terminal, its copy, the stream).
func TestDockerShellTimeoutLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a Docker run that must outlive its timeout (about 15 s); make test-go runs it")
	}
	e, _ := dockerEngine(t, nil)
	ctx := context.Background()
	sb, err := e.Create(ctx, SandboxConfig{Backend: ptr("docker")})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Delete(ctx, sb.ID, true)
	if _, err := e.Exec(ctx, sb.ID, RunRequest{Command: "true"}); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	for _, script := range []string{"sleep 600", "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done"} {
		stdinR, stdinW := io.Pipe()
		typing := make(chan struct{})
		go func() {
			defer stdinW.Close()
			for {
				select {
				case <-typing:
					return
				case <-time.After(5 * time.Millisecond):
					if _, err := io.WriteString(stdinW, "k"); err != nil {
						return
					}
				}
			}
		}()
		att := &Attachment{Stdin: stdinR, Terminal: &TerminalRequest{Cols: 80, Rows: 24, FDs: []int{0, 1, 2}}}
		start := time.Now()
		res, err := e.Exec(ctx, sb.ID, RunRequest{Command: script, Attach: att, TimeoutMs: 2000})
		close(typing)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); !res.Record.Terminal || !res.Record.TimedOut || took > 30*time.Second {
			t.Fatalf("%q: timed out %v after %v (record %+v)", script, res.Record.TimedOut, took, res.Record)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := openFDs(t)
		if len(after) <= len(before) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine holds %d descriptors more after the runs:\nbefore %v\nafter %v", len(after)-len(before), before, after)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openFDs lists this process's descriptors and what they are.
func openFDs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"->"+l)
	}
	return out
}
