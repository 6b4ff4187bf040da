package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// Kill kills the run's whole tree, keeping the output so far. On this
// machine's daemon it signals the host pids; otherwise it runs kill inside
// the container; only when both fail does it restart the container. After
// Wait it does nothing (a pid may have been reused by then).
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
		return p.restart(ctx, err)
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

// killTree kills the tree of the exec whose daemon pid is pid. final is
// the clean-up after the exec ended.
func (p *process) killTree(pid int, final bool) error {
	if pid == 0 {
		return nil
	}
	if p.ref.HostPids {
		err := killHostTree(pid, p.ref.InitPid, p.ref.ID)
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
		return err
	}
	return p.killInside(final)
}

// killInside runs kill in the container against the run's process group
// (runc makes each exec a session and group leader), found by the pid the
// run's wrapper wrote to its pid file. The pid is read once and kept, so a
// second kill hits the same group.
func (p *process) killInside(final bool) error {
	p.killMu.Lock()
	defer p.killMu.Unlock()
	file := pidFile(p.runID)
	pid := "$(cat " + file + " 2>/dev/null)"
	if p.inPid > 0 {
		pid = strconv.Itoa(p.inPid)
	}
	// No pid (the run removed its pid file): fail, so that Kill falls back
	// to restarting the container rather than killing nothing. The final
	// clean-up only removes the pid file.
	missing, cleanup := "exit 3", ""
	if final {
		missing, cleanup = "exit 0", "; rm -f "+file
	}
	script := "p=" + pid + "; [ -n \"$p\" ] || " + missing + "; echo $p; { kill -KILL -- -$p || kill -KILL $p; } 2>/dev/null" + cleanup + "; true"
	out, code, err := p.execQuiet(script)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kill inside the container exited with %d (the run's pid file %s is gone)", code, file)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(out)); err == nil && n > 0 {
		p.inPid = n
	}
	return nil
}

// maxQuietOutput bounds what execQuiet keeps of a script's output.
const maxQuietOutput = 4096

// execQuiet runs a short sh script in the container as the container's
// user and returns its output and exit code.
func (p *process) execQuiet(script string) (string, int, error) {
	ctx, cancel := callCtx(context.Background(), callTimeout)
	defer cancel()
	e, err := p.cli.ContainerExecCreate(ctx, p.ref.ID, container.ExecOptions{Cmd: []string{"/bin/sh", "-c", script}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", 0, p.b.daemonErr("starting kill inside the container", err)
	}
	hj, err := p.cli.ContainerExecAttach(ctx, e.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", 0, p.b.daemonErr("starting kill inside the container", err)
	}
	defer hj.Close()
	// The scripts print a pid, read from a file the sandboxed code can
	// write: only the first bytes are kept, and the rest is drained.
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, io.Discard, io.LimitReader(hj.Reader, maxQuietOutput))
	_, _ = io.Copy(io.Discard, hj.Reader)
	ins, err := p.waitExit(e.ID)
	if err != nil {
		return "", 0, err
	}
	return out.String(), ins.ExitCode, nil
}

// restart is the last resort: restarting the container kills every process
// in it, this run's and any other's. It says so in the run's enforcement.
func (p *process) restart(ctx context.Context, cause error) error {
	timeout := 0
	err := p.cli.ContainerRestart(ctx, p.ref.ID, container.StopOptions{Timeout: &timeout})
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
