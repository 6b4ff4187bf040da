package docker

import (
	"context"
	"errors"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/netfwd/remotefs"
)

// Files is the file API of spec's sandbox on a daemon elsewhere, whose
// workspace the engine cannot open: each operation is an exec of the
// forwarder's files role in the sandbox's container, as the sandbox user
// (remotefs). The container is made and started if need be, and counts
// as in use until done is called.
func (b *Backend) Files(ctx context.Context, spec *backends.Spec) (fs *remotefs.Client, done func(), err error) {
	s, cli, err := b.prepare(spec)
	if err != nil {
		return nil, nil, err
	}
	if !s.Remote || spec.OneShot {
		return nil, nil, errors.New("the file API through the container is for the sandboxes of an engine elsewhere")
	}
	st := b.state(spec.SandboxID)
	ref, err := b.ensureSandbox(ctx, cli, st, spec, s)
	if err != nil {
		return nil, nil, err
	}
	c := &remotefs.Client{Binary: netfwd.BinaryPath, Root: workDir}
	c.Exec = func(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) (string, int, error) {
		stderr, code, err := b.execHelper(ctx, cli, ref, s.User, argv, stdin, stdout)
		var late *startedError
		if err != nil && !errors.As(err, &late) && (cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err)) {
			// Stopped behind our back (a daemon restart): made to run
			// again, and the operation, which had not begun, tried once
			// more.
			st.mu.Lock()
			st.ready = nil
			st.mu.Unlock()
			again, aerr := b.ensureSandbox(ctx, cli, st, spec, s)
			if aerr != nil {
				return "", 0, aerr
			}
			b.end(st) // the operation still counts once
			ref = again
			return b.execHelper(ctx, cli, ref, s.User, argv, stdin, stdout)
		}
		return stderr, code, err
	}
	return c, func() { b.end(st) }, nil
}

// maxHelperStderr bounds what is kept of a helper's stderr.
const maxHelperStderr = 4096

// execHelper runs argv in ref's container as user, stdin (nil: none)
// as its input and its stdout into stdout, and returns the last line of
// its stderr and its exit code. ctx bounds it all: a helper blocked in
// the container (on a FIFO the sandbox planted) ends with it.
func (b *Backend) execHelper(ctx context.Context, cli *apiClient, ref *ctrRef, user string, argv []string, stdin io.Reader, stdout io.Writer) (string, int, error) {
	cctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	created, err := cli.ExecCreate(cctx, ref.ID, client.ExecCreateOptions{
		User: user, WorkingDir: workDir, Env: []string{"PATH=/usr/bin:/bin"}, Cmd: argv,
		AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return "", 0, b.daemonErr("starting the file helper in the container", err)
	}
	hj, err := cli.execStart(cctx, created.ID, false, nil)
	if err != nil {
		return "", 0, b.daemonErr("starting the file helper in the container", err)
	}
	defer hj.Close()
	// From here on the helper may have read its input: not to be tried
	// again.
	fail := func(err error) (string, int, error) { return "", 0, &startedError{err} }
	stop := context.AfterFunc(ctx, func() { _ = hj.Close() })
	defer stop()
	sent := make(chan error, 1)
	if stdin != nil {
		go func() {
			_, err := io.Copy(hj.Conn, stdin)
			if err == nil {
				err = hj.CloseWrite()
			}
			sent <- err
		}()
	} else {
		sent <- nil
	}
	errb := &tailBuffer{max: maxHelperStderr}
	if _, err := demux(stdout, errb, hj.Reader); err != nil {
		hj.Close()
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		return fail(err)
	}
	select {
	case <-sent:
	default:
		// The helper ended before it read all its input (its refusal
		// says why): what is left is not sent.
		hj.Close()
		<-sent
	}
	ins, err := b.waitExec(ctx, cli, created.ID)
	if err != nil {
		return fail(err)
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	return lines[len(lines)-1], ins.ExitCode, nil
}

// startedError is a failure of a helper that had started: its input may
// have been read, so it is not tried again.
type startedError struct{ err error }

func (e *startedError) Error() string { return e.err.Error() }
func (e *startedError) Unwrap() error { return e.err }
