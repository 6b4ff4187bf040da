package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/app/rundir"
	"github.com/senclaw/sandbox/app/safetext"
)

// connect returns a client of this user's daemon, starting a headless one
// in the background when none answers. A daemon that answers but whose
// engine could not start (a damaged store) is an *engineUnavailable,
// with the client, at once: starting another would only find it running.
// With SENCLAW_TOKEN set, the client sends that token: the commands act
// as its principal (an agent's or a tenant's), on the owner's socket as
// on the network.
func (x *invocation) connect(ctx context.Context, d client.Dirs, stderr io.Writer) (*client.Client, error) {
	c, err := x.dial(ctx, d, stderr)
	if c != nil {
		c = x.withToken(c)
	}
	return c, err
}

// withToken is c sending SENCLAW_TOKEN, when it is set.
func (x *invocation) withToken(c *client.Client) *client.Client {
	if tok := strings.TrimSpace(x.getenv("SENCLAW_TOKEN")); tok != "" {
		return c.WithToken(tok)
	}
	return c
}

// asAgent returns c acting as the agent token name (of tenant, when it
// is not empty) of one of the owner's faces that agents run
// (AgentClient), or as SENCLAW_TOKEN's principal when it is set.
func (x *invocation) asAgent(c *client.Client, name, tenant string) (*client.Client, error) {
	d, err := x.dirs()
	if err != nil {
		return nil, err
	}
	return agentClient(x.ctx, x.withToken(c), d.Config, name, tenant)
}

// dial is connect without the token.
func (x *invocation) dial(ctx context.Context, d client.Dirs, stderr io.Writer) (*client.Client, error) {
	// A daemon that listens takes the connection at once: the command's
	// own request follows on it, with no health round trip before it. A
	// daemon whose engine could not start answers that request 503, which
	// the commands say as a refusal (exit 126) with its reason.
	sock := apitype.SocketPath(d.Runtime)
	c, err := client.ConnectSocket(sock, 2*time.Second)
	switch {
	case err == nil:
		return c, nil
	case client.IsUntrusted(err):
		// Another user's folder or server: a daemon started now would
		// meet the same, and nothing may be sent there.
		return nil, err
	}
	c = client.DialSocket(sock)
	exited, err := x.spawnDaemon(d.Runtime)
	if err != nil {
		return nil, fmt.Errorf("no daemon answers and one could not be started: %w", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		err := c.Ping(ctx, time.Second)
		if err == nil {
			return c, nil
		}
		if down := asUnavailable(err); down != nil {
			return c, down
		}
		select {
		case why := <-exited:
			if strings.Contains(why, "already running") {
				// Another daemon of this user took the lock first (it is
				// starting, or slow to answer): it is the one to wait for.
				exited = nil
				continue
			}
			// It ended before it answered: what it said is why (a bad
			// setting, an engine of this data dir running elsewhere, ...).
			return nil, fmt.Errorf("no daemon answers and one could not be started: %s (see %s)", why, filepath.Join(d.Runtime, "daemon.log"))
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("started a daemon, but it does not answer on %s; see %s", sock, filepath.Join(d.Runtime, "daemon.log"))
}

// engineUnavailable is a daemon that answers /health with 503: it runs,
// but its engine could not start, for Reason.
type engineUnavailable struct{ Reason string }

func (e *engineUnavailable) Error() string {
	return "the daemon runs, but its engine cannot: " + e.Reason + "; nothing was run (senclaw doctor says more; senclaw stop stops the daemon)"
}

func asUnavailable(err error) *engineUnavailable {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == http.StatusServiceUnavailable {
		return &engineUnavailable{Reason: ce.Message}
	}
	return nil
}

// spawnDaemon starts `senclaw serve` (senclaw-engine, shown as senclaw)
// detached from this process, logging to the runtime dir. exited gets
// what the daemon wrote to its log when it ends while this process still
// waits for it to answer.
func (x *invocation) spawnDaemon(runtimeDir string) (exited <-chan string, err error) {
	engine, err := x.enginePath()
	if err != nil {
		return nil, err
	}
	// The runtime dir is made (or checked) here as the daemon will, and
	// its log opened through it, following no link.
	dir, err := rundir.Open(runtimeDir)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	logf, err := dir.AppendLog("daemon.log")
	if err != nil {
		return nil, err
	}
	from, _ := logf.Seek(0, io.SeekEnd)
	args := []string{x.cliPath()}
	if x.dataDir != "" {
		args = append(args, "--data-dir", x.dataDir)
	}
	cmd := exec.Command(engine)
	cmd.Args = append(args, "serve")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	ch := make(chan string, 1)
	go func() {
		defer logf.Close()
		err := cmd.Wait()
		ch <- lastWords(logf, from, err)
	}()
	return ch, nil
}

// lastWords is what a daemon that ended wrote to its log since from: its
// last line, without the "senclaw: " every line starts with; else how
// it ended.
func lastWords(log *os.File, from int64, err error) string {
	buf := make([]byte, 4096)
	n, _ := log.ReadAt(buf, from)
	lines := strings.Split(strings.TrimSpace(string(bytes.ToValidUTF8(buf[:n], []byte("?")))), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		last = strings.TrimPrefix(last, "senclaw serve: ")
		return safetext.Escape(strings.TrimPrefix(last, "senclaw: "))
	}
	if err == nil {
		return "it exited at once"
	}
	return "it ended: " + err.Error()
}

// stopDaemon asks the daemon to stop and waits until it has.
func stopDaemon(ctx context.Context, runtimeDir string, io streams) int {
	sock := apitype.SocketPath(runtimeDir)
	c := client.DialSocket(sock)
	if err := c.Ping(ctx, 2*time.Second); err != nil && asUnavailable(err) == nil {
		if client.IsUntrusted(err) {
			fmt.Fprintln(io.Err, "senclaw stop:", err)
			return ExitFailure
		}
		fmt.Fprintln(io.Out, "senclaw is not running")
		return 0
	}
	if err := c.StopDaemon(ctx); err != nil {
		fmt.Fprintln(io.Err, "senclaw stop:", err)
		return ExitFailure
	}
	// The daemon is gone once it has let go of its lock, which comes
	// after its socket goes (it closes the engine in between): a daemon
	// started before would find it held (`senclaw stop && senclaw run`).
	dir, err := rundir.Check(runtimeDir)
	if err != nil {
		fmt.Fprintln(io.Err, "senclaw stop:", err)
		return ExitFailure
	}
	defer dir.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(sock); os.IsNotExist(err) && !dir.Held() {
			fmt.Fprintln(io.Out, "senclaw stopped")
			return 0
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintln(io.Err, "senclaw stop: the daemon did not stop within 20 s (its log: "+filepath.Join(runtimeDir, "daemon.log")+")")
	return ExitFailure
}
