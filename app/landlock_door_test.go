package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestLandlockDoorAnswersOnlyTheRun: a Landlock run reaches the engine's
// proxy through a door on 127.0.0.1, which every local user can connect
// to. The real second user's CONNECT to this machine's service that the
// sandbox's loopback rule names is closed unanswered, and counted with
// the sandbox's refusals (where the proxy's own are), while the run
// itself still reaches that service through its door.
func TestLandlockDoorAnswersOnlyTheRun(t *testing.T) {
	t.Parallel()
	testutil.RequireRoot(t)
	e := landlockEngine(t)
	other := testutil.SecondUser(t)
	ctx := context.Background()
	named := localHTTP(t)
	sb, err := e.Create(ctx, SandboxConfig{Network: ptr(true), Loopback: []int{named}})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res *RunResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := e.Exec(ctx, sb.ID, RunRequest{Command: fmt.Sprintf(`echo "$SENCLAW_PROXY_PORT" > door
while [ ! -e go ]; do sleep 0.02; done
curl -s -o /dev/null -w "named %%{http_code}\n" http://127.0.0.1:%d/`, named)})
		done <- result{res, err}
	}()
	var door string
	testutil.WaitFor(t, 30*time.Second, "the run's door port", func() bool {
		b, _ := os.ReadFile(filepath.Join(sb.Workspace, "door"))
		door = strings.TrimSpace(string(b))
		return door != ""
	})
	got := other.Run(t, "/usr/bin/python3", "-c", fmt.Sprintf(`import socket
s = socket.create_connection(("127.0.0.1", %s), timeout=5)
s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n")
try:
    print("answer", repr(s.recv(64).decode()))
except OSError as e:
    print("answer", repr(""), e.errno)
`, door, named, named))
	if !strings.HasPrefix(got, "answer ''") {
		t.Errorf("the second user's CONNECT through the run's door: %s", got)
	}
	if err := os.WriteFile(filepath.Join(sb.Workspace, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !strings.Contains(r.res.Stdout, "named 200") {
		t.Errorf("the run did not reach the named service: %q (stderr %q)", r.res.Stdout, r.res.Stderr)
	}
	n, recent := e.NetworkDenials(sb.ID)
	if n != 1 || len(recent) != 1 || recent[0] != fmt.Sprintf("door: uid %d", other.UID) {
		t.Errorf("refusals counted: %d %q", n, recent)
	}
}
