package bwrap

import (
	"os/exec"
	"strings"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/tracer"
)

var _ tracer.Outside = (*Backend)(nil)

// TracesFromOutside reports whether a traced run is followed by strace
// from outside the sandbox (strace and setpriv are installed).
func (b *Backend) TracesFromOutside() (bool, string) { return tracer.Available() }

// traceCommand puts strace in front of bwrap when spec asks for a trace.
// strace runs as the engine's user (root for a root engine) outside the
// sandbox, its cgroups and its rlimits; setpriv drops to the sandbox user
// right before bwrap. Both, like bwrap, start with the fixed helper
// environment (bwrap sets the run's for the command), so no launcher is
// needed. bwrap's own exec counts as a launcher, so the trace starts at
// the sandboxed command's execve. It returns nil when spec is not traced.
func traceCommand(cmd *exec.Cmd, spec *backends.Spec) (*tracer.Session, error) {
	if spec.Trace == nil {
		return nil, nil
	}
	if spec.Net == nil && spec.UnixGuard == nil && spec.Terminal == nil {
		return tracer.Wrap(cmd, spec.Trace, 1, "")
	}
	// The forwarder's exec is a launcher too (it also loads the Unix
	// socket guard, then execs the command), and its relays to the proxy
	// are machinery: the sandboxed program's own connect is what the trace
	// shows.
	emit := spec.Trace
	return tracer.Wrap(cmd, func(ev backends.TraceEvent) {
		if ev.Kind == "net.connect" && strings.HasPrefix(ev.Target, "unix:"+netfwd.MountDir+"/") {
			return
		}
		emit(ev)
	}, 2, "")
}
