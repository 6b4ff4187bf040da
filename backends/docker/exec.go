package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
)

// Start runs spec as an exec in the sandbox's container (made on first use)
// or, for a one-shot spec, in a container from the warm pool. It never
// pulls an image and never runs anything outside a container.
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("no command given")
	}
	if spec.SandboxID == "" {
		return nil, errors.New("no sandbox id given: docker names the container after it")
	}
	s, cli, err := b.prepare(spec)
	if err != nil {
		return nil, err
	}
	if spec.OneShot {
		return b.startOneShot(ctx, cli, spec, s)
	}
	st := b.state(spec.SandboxID)
	for attempt := 0; ; attempt++ {
		ref, err := b.ensureSandbox(ctx, cli, st, spec, s)
		if err != nil {
			return nil, err
		}
		p, err := b.exec(ctx, cli, ref, spec, s, func() { b.end(st) })
		if err == nil {
			p.forget = func() {
				st.mu.Lock()
				st.ready = nil
				st.mu.Unlock()
			}
			return p, nil
		}
		b.end(st)
		// Stopped behind our back (docker stop, a daemon restart): forget
		// the container and look again, once.
		if attempt == 0 && (cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err)) {
			st.mu.Lock()
			st.ready = nil
			st.mu.Unlock()
			continue
		}
		return nil, b.daemonErr("starting the run in the sandbox's container", err)
	}
}

// exec starts spec's command in ref and streams its output. done runs once
// when the run has ended.
func (b *Backend) exec(ctx context.Context, cli *apiClient, ref *ctrRef, spec *backends.Spec, s shape, done func()) (_ *process, err error) {
	pm := newPathMap(s)
	argv := pm.argv(spec.Argv)
	runID := safeRunID(spec.RunID)
	if ref.Remote {
		// The forwarder copied in wraps every run elsewhere: it keeps
		// the run's pid where a kill exec finds it, and ends the run's
		// whole tree with the run (remote.go).
		argv = netfwd.ArgvWith(spec.Net, netfwd.Handles{Reap: pidFile(runID)}, argv)
		release, rerr := b.remoteBefore(ctx, cli, ref, spec, s)
		if rerr != nil {
			return nil, rerr
		}
		ended := done
		done = func() {
			release()
			ended()
		}
		defer func() {
			if err != nil {
				release()
			}
		}()
	} else {
		if spec.Net != nil {
			argv = netfwd.Argv(spec.Net, argv)
		}
		if !ref.HostPids {
			// The daemon's pids are not ours to signal: keep the run's
			// in-container pid where a kill exec can find it.
			argv = append([]string{"/bin/sh", "-c", `echo $$ >` + pidFile(runID) + `; exec "$@"`, "sh"}, argv...)
		}
	}
	opts := client.ExecCreateOptions{
		User:         s.User,
		WorkingDir:   workDir,
		Env:          pm.env(spec.Env),
		Cmd:          argv,
		AttachStdin:  spec.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
	}
	// size is the terminal's [height, width], for the start.
	var size *[2]uint
	var tty *os.File
	if spec.Terminal != nil {
		// As docker exec -it: the daemon makes the command's terminal
		// (its stdin, stdout and stderr all), and the engine's relays it.
		t, cols, rows, err := relayTerminal(spec.Terminal)
		if err != nil {
			return nil, err
		}
		tty = t
		opts.TTY, opts.AttachStdin = true, true
		size = &[2]uint{rows, cols}
		if !versions.LessThan(cli.ClientVersion(), "1.42") {
			// (A daemon before API 1.42 does not know the field.)
			opts.ConsoleSize = client.ConsoleSize{Height: rows, Width: cols}
		} else if cols > 0 && rows > 0 {
			// Such a daemon sets the size only after the start (a resize,
			// below), which a quick command beats: it is set inside first.
			opts.Cmd = append([]string{"/bin/sh", "-c", fmt.Sprintf(`stty rows %d cols %d 2>/dev/null; exec "$@"`, rows, cols), "sh"}, opts.Cmd...)
		}
	}
	fail := func(err error) (*process, error) {
		if tty != nil {
			tty.Close()
		}
		return nil, err
	}
	cctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	created, err := cli.ExecCreate(cctx, ref.ID, opts)
	if err != nil {
		return fail(err)
	}
	execID := created.ID
	hj, err := cli.execStart(cctx, execID, opts.TTY, size)
	if err != nil {
		return fail(err)
	}
	p := &process{
		b: b, cli: cli, ref: ref, execID: execID, runID: runID,
		conn: hj.Conn, copied: make(chan struct{}), done: done, tty: tty,
		enforcement: enforcementOf(spec, s),
	}
	if tty != nil {
		// A daemon before API 1.42 does not take the size with the start:
		// it is set at once after, as docker exec -it does.
		go func() {
			for i := 0; i < 10; i++ {
				if p.Resize(uint16(size[1]), uint16(size[0])) == nil {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		// Keys typed go in until the terminal is closed (Wait); the
		// output, one stream with a terminal, goes out until it ends.
		go func() { _, _ = io.Copy(hj.Conn, tty) }()
		go func() {
			defer close(p.copied)
			_, p.copyErr = io.Copy(tty, hj.Reader)
		}()
		return p, nil
	}
	if spec.Stdin != nil {
		go func() {
			_, _ = io.Copy(hj.Conn, spec.Stdin)
			_ = hj.CloseWrite()
		}()
	}
	stdout, stderr := orDiscard(spec.Stdout), orDiscard(spec.Stderr)
	go func() {
		defer close(p.copied)
		_, p.copyErr = demux(stdout, stderr, hj.Reader)
	}()
	return p, nil
}

// enforcementOf says what a run of spec in a container of shape s gets.
func enforcementOf(spec *backends.Spec, s shape) backends.Enforcement {
	e := backends.Enforcement{
		Isolation: "docker",
		Limits: []string{
			fmt.Sprintf("memory: container cgroup, %d MB, no swap", s.MemoryMB),
			fmt.Sprintf("pids: container cgroup, %d", s.Pids),
		},
		Missing: notEnforced(spec),
	}
	if s.CPUs != "" {
		e.Limits = append(e.Limits, "cpu: container cgroup, "+strings.TrimRight(strings.TrimRight(s.CPUs, "0"), ".")+" CPUs")
	}
	switch {
	case s.DiskMB > 0 && s.Remote:
		// The engine's line says what holds the workspace volume.
		e.Limits = append(e.Limits, fmt.Sprintf("files: fsize rlimit %d MB", s.DiskMB))
	case s.DiskMB > 0:
		e.Limits = append(e.Limits, fmt.Sprintf("disk: fsize rlimit %d MB + engine watchdog", s.DiskMB))
	}
	e.Limits = append(e.Limits, "seccomp: docker default + senclaw denials", "root fs read-only, no capabilities, no-new-privileges, user "+s.User)
	switch {
	case spec.OneShot:
		e.Limits = append(e.Limits, "processes: the container is removed when the run ends")
	case s.Remote:
		e.Limits = append(e.Limits, "processes: the run's, and what left its session (setsid, a double fork), are killed when it ends, by the forwarder in front of it in the container (their subreaper); the sandbox's other runs go on")
	default:
		e.Limits = append(e.Limits, "processes: the run's, and what left its session (setsid, a double fork), are killed when it ends; the sandbox's other runs go on")
	}
	if spec.Net == nil {
		e.Limits = append(e.Limits, "network: none")
	} else {
		e.Limits = append(e.Limits, "network: none (no interface but loopback); egress only through the engine's proxy (HTTP 127.0.0.1:3128, SOCKS5 127.0.0.1:1080 inside), which applies the port, domain and address rules; UDP and other non-TCP traffic is not forwarded (so it is blocked)")
	}
	return e
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// safeRunID keeps a run id usable in a file name inside the container.
func safeRunID(id string) string {
	var sb strings.Builder
	for _, r := range id {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			sb.WriteRune(r)
		}
	}
	if sb.Len() == 0 {
		return "run"
	}
	return sb.String()
}

// pidFile is where a wrapped run keeps its in-container pid.
func pidFile(runID string) string { return "/tmp/.senclaw-" + runID + ".pid" }
