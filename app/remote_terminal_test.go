//go:build linux

package app

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestRemoteShellGetsATerminal is TestDockerShellGetsATerminal on the
// remote engine: the forwarder in front of the run there keeps the
// terminal the command's (its foreground), typed input reaches it, and a
// resize comes as SIGWINCH.
func TestRemoteShellGetsATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: containers on a second Docker daemon; make test-go runs it")
	}
	t.Parallel()
	e := remoteEngine(t, testutil.Remote(t))
	sb := newRemoteSandbox(t, e, SandboxConfig{})
	ctx := context.Background()
	stdinR, stdinW := io.Pipe()
	control := make(chan Control, 4)
	out := &lockedBuffer{}
	started := make(chan RunRecord, 1)
	script := `test -t 0 && echo stdin-tty; test -t 1 && echo stdout-tty
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
	if !res.Record.Terminal || !res.Record.OK() {
		t.Fatalf("record %+v\nout %q", res.Record, got)
	}
	for _, want := range []string{"stdin-tty\n", "stdout-tty\n", "24 80\n", "got typed\n", "30 100\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal's output %q lacks %q", got, want)
		}
	}
}
