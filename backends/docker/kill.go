package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// Kill kills the run's whole tree, and what it started that left it,
// keeping the output so far. On this machine's daemon it signals the host
// pids; otherwise it runs kill inside the container; only when both fail
// does it restart the container. After Wait it does nothing (a pid may
// have been reused by then).
func (p *process) Kill() error {
	p.killed.Store(true)
	if p.finished.Load() {
		return nil
	}
	ctx, cancel := callCtx(context.Background(), callTimeout)
	defer cancel()
	pid, err := p.leader(ctx)
	if err != nil {
		return p.restart(ctx, err)
	}
	if err := p.killTree(pid, false); err != nil {
		// The sweep may have used ctx up (a script blocked in it): the
		// restart has a call of its own.
		rctx, rcancel := callCtx(context.Background(), callTimeout)
		defer rcancel()
		return p.restart(rctx, err)
	}
	return nil
}

// Terminate asks the run's tree to end with SIGTERM: through the host pids
// on this machine's daemon, else by a kill inside the container. Kill
// follows if it does not end.
func (p *process) Terminate() error {
	if p.finished.Load() {
		return nil
	}
	ctx, cancel := callCtx(context.Background(), callTimeout)
	defer cancel()
	pid, err := p.leader(ctx)
	if err != nil {
		return err
	}
	if p.ref.HostPids {
		if err := signalHostTree(pid, p.ref.InitPid, p.ref.ID, syscall.SIGTERM); err == nil {
			return nil
		}
	}
	p.killMu.Lock()
	n := p.inPid
	p.killMu.Unlock()
	if n <= 0 {
		n = nsPid(pid)
	}
	target := "$(cat " + pidFile(p.runID) + " 2>/dev/null)"
	if n > 0 {
		target = strconv.Itoa(n)
	}
	_, _, err = p.execQuiet("p=" + target + "; [ -n \"$p\" ] || exit 0; { kill -TERM -- -$p || kill -TERM $p; } 2>/dev/null; true")
	return err
}

// killTree sweeps the container (see sweepable) with the run whose
// daemon pid is pid as the one to end: its session and every process no
// live exec leads. final is the clean-up after the exec ended.
func (p *process) killTree(pid int, final bool) error {
	if pid == 0 {
		return nil
	}
	if p.ref.HostPids {
		err := sweepHost(p.ref.InitPid, p.ref.ID, pid)
		if err == nil {
			return nil
		}
		// Not ours to signal (the engine runs as another user than the
		// sandbox): do it from inside, by the in-container pid.
		if n := nsPid(pid); n > 0 {
			p.killMu.Lock()
			p.inPid = n
			p.killMu.Unlock()
			return p.killInside(final)
		}
		if final {
			// The leader is gone, and so its in-container pid: the
			// sweep inside needs none after the run ended.
			return p.killInside(final)
		}
		return err
	}
	return p.killInside(final)
}

// sweepScript is sweepable run inside the container with the shell alone
// (no tool of the image): $1 is the in-container pid of the run to end
// ("" once it ended), killed first so that it does not exit on its own
// when its children die. It prints how many processes it killed; the
// caller runs it again until none is left.
const sweepScript = `own=$1; live=" "
[ -n "$own" ] && kill -KILL "$own" 2>/dev/null
for d in /proc/[0-9]*; do
  { read -r l < "$d/stat"; } 2>/dev/null || continue
  set -- ${l##*") "}
  [ "$2" = 0 ] && [ "${d#/proc/}" != "$own" ] && live="$live$4 "
done
n=0
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  { [ "$p" = 1 ] || [ "$p" = $$ ]; } && continue
  { read -r l < "$d/stat"; } 2>/dev/null || continue
  set -- ${l##*") "}
  [ "$4" = 1 ] && continue
  case "$live" in *" $4 "*) continue;; esac
  kill -KILL "$p" 2>/dev/null && n=$((n+1))
done
echo $n`

// killInside runs the sweep in the container, as the container's user.
// The run's in-container pid is the one its wrapper wrote to its pid file
// (or nsPid found); it is read once and kept, so a second kill ends the
// same run. Sweeps of one container run one at a time, so that one never
// takes another's shell for a leftover.
func (p *process) killInside(final bool) error {
	p.killMu.Lock()
	defer p.killMu.Unlock()
	file := pidFile(p.runID)
	own := strconv.Itoa(p.inPid)
	if p.inPid == 0 {
		own = ""
		if !final {
			// Read the pid file; with none (the run removed it) Kill
			// falls back to restarting the container rather than leave
			// the run going.
			out, code, err := p.execQuiet(`read -r p < ` + file + ` 2>/dev/null && [ -n "$p" ] && echo "$p"`)
			if err != nil {
				return err
			}
			if n, err := strconv.Atoi(strings.TrimSpace(out)); code == 0 && err == nil && n > 0 {
				p.inPid, own = n, strconv.Itoa(n)
			} else {
				return fmt.Errorf("the run's pid file %s is gone, so the run cannot be told from the sandbox's other runs", file)
			}
		}
	}
	sweep := p.b.sweepLock(p.ref.ID)
	sweep.Lock()
	defer sweep.Unlock()
	for round := 0; round < 20; round++ {
		out, code, err := p.execQuiet(sweepScript, own)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("the sweep inside the container exited with %d: %s", code, strings.TrimSpace(out))
		}
		if strings.TrimSpace(out) == "0" {
			if final {
				_, _, _ = p.execQuiet(`rm -f ` + file)
			}
			return nil
		}
		time.Sleep(time.Duration(round+1) * 5 * time.Millisecond)
	}
	return errors.New("processes of the run kept appearing after 20 kill rounds inside the container")
}

// maxQuietOutput bounds what execQuiet keeps of a script's output.
const maxQuietOutput = 4096

// execQuiet runs a short sh script with args in the container as the
// container's user and returns its output and exit code.
func (p *process) execQuiet(script string, args ...string) (string, int, error) {
	ctx, cancel := callCtx(context.Background(), callTimeout)
	defer cancel()
	cmd := append([]string{"/bin/sh", "-c", script, "sh"}, args...)
	created, err := p.cli.ExecCreate(ctx, p.ref.ID, client.ExecCreateOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", 0, p.b.daemonErr("starting kill inside the container", err)
	}
	execID := created.ID
	hj, err := p.cli.execStart(ctx, execID, false, nil)
	if err != nil {
		return "", 0, p.b.daemonErr("starting kill inside the container", err)
	}
	defer hj.Close()
	// The stream and the wait for the exit end with ctx: the file a
	// script reads may be a FIFO the sandboxed code put there, which
	// blocks it for ever.
	stop := context.AfterFunc(ctx, func() { _ = hj.Close() })
	defer stop()
	// The scripts print a pid, read from a file the sandboxed code can
	// write: only the first bytes are kept, and the rest is drained.
	var out bytes.Buffer
	_, _ = demux(&out, io.Discard, io.LimitReader(hj.Reader, maxQuietOutput))
	_, _ = io.Copy(io.Discard, hj.Reader)
	ins, err := p.waitExit(ctx, execID)
	if err != nil {
		return "", 0, err
	}
	return out.String(), ins.ExitCode, nil
}

// restart is the last resort: restarting the container kills every process
// in it, this run's and any other's. It says so in the run's enforcement.
func (p *process) restart(ctx context.Context, cause error) error {
	_, err := p.cli.ContainerRestart(ctx, p.ref.ID, restartNow)
	if err != nil {
		return fmt.Errorf("killing the run failed (%v), and so did restarting its container: %w", cause, p.b.daemonErr("restarting the container", err))
	}
	if p.forget != nil {
		p.forget() // its init pid changed
	}
	p.b.log.Warn("A docker run could not be killed on its own; its container was restarted, which ended every process in it.", "run", p.runID, "cause", cause)
	p.enforcementMu.Lock()
	p.enforcement.Missing = append(p.enforcement.Missing, "kill: the run could not be killed on its own, so its container was restarted, ending every process in it")
	p.enforcementMu.Unlock()
	return fmt.Errorf("the run could not be killed on its own (%v): its container was restarted, which also ended the sandbox's other processes", cause)
}

// restartNow restarts a container with SIGKILL at once.
var restartNow = client.ContainerRestartOptions{Timeout: new(int)}

// sweepLock is the lock of the sweeps inside container id.
func (b *Backend) sweepLock(id string) *sync.Mutex {
	m, _ := b.sweeps.LoadOrStore(id, &sync.Mutex{})
	return m.(*sync.Mutex)
}
