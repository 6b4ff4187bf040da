package mcp_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestSandboxServerOverStdio drives the real binary as an agent client
// does: `senclaw sandbox-server` over stdin/stdout, in front of a daemon
// started with `senclaw serve`, all in private directories.
func TestSandboxServerOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	testutil.RequireBwrap(t)
	t.Parallel()
	dir := testDir(t)
	// senclaw with senclaw-engine and the forwarder beside it, as make
	// build leaves them: every bwrap run needs the forwarder (the Unix
	// socket guard).
	bin := testutil.Senclaw(t)
	runtimeDir := filepath.Join(dir, "rt")
	testutil.StopDaemonAtCleanup(t, filepath.Join(runtimeDir, "senclaw"))
	for _, d := range []string{runtimeDir, filepath.Join(dir, "cfg")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+runtimeDir, "XDG_CONFIG_HOME="+filepath.Join(dir, "cfg"), "SENCLAW_DATA_DIR=")
	senclaw := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"--data-dir", filepath.Join(dir, "data")}, args...)...)
		cmd.Env = env
		return cmd
	}

	// The daemon logs to a file, not a pipe: Wait must not depend on
	// every process that might inherit the pipe closing it.
	daemonLog, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer daemonLog.Close()
	logText := func() string {
		data, _ := os.ReadFile(daemonLog.Name())
		return string(data)
	}
	daemon := senclaw("serve", "--listen", "")
	daemon.Stdout, daemon.Stderr = daemonLog, daemonLog
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = daemon.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = daemon.Process.Kill()
			<-exited
		}
	})
	c := client.DialSocket(apitype.SocketPath(filepath.Join(runtimeDir, "senclaw")))
	deadline := time.Now().Add(15 * time.Second)
	for c.Ping(context.Background(), time.Second) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon does not answer:\n%s", logText())
		}
		time.Sleep(50 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := senclaw("sandbox-server")
	var serverErr bytes.Buffer
	server.Stderr = &serverErr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "stdio-test", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatalf("connecting to sandbox-server: %v\n%s", err, serverErr.String())
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != len(toolNames) {
		t.Fatalf("tools: %v %v", tools, err)
	}
	r := callTool(t, cs, "sbx_run", map[string]any{"language": "python", "code": "print(6*7)"})
	if r.isErr || get(r.obj, "run", "stdout") != "42\n" || get(r.obj, "run", "isolation") != "bwrap" || !strings.Contains(r.text, "42") {
		t.Fatalf("sbx_run: %v %q\nserver: %s", r.obj, r.text, serverErr.String())
	}
	runs, err := c.Runs(ctx, "", 1)
	if err != nil || len(runs) != 1 || runs[0].Source != "mcp" || runs[0].Isolation != "bwrap" {
		t.Fatalf("the daemon's record: %+v %v", runs, err)
	}
	if err := cs.Close(); err != nil {
		t.Logf("closing the session: %v", err)
	}

	if out, err := senclaw("stop").CombinedOutput(); err != nil || !strings.Contains(string(out), "senclaw stopped") {
		t.Fatalf("senclaw stop: %v %s", err, out)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Fatalf("the daemon exited with %v:\n%s", exitErr, logText())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not exit after senclaw stop")
	}
}

func TestMain(m *testing.M) { testutil.Main(m) }
