package direct

import (
	"os/exec"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/tracer"
)

var _ tracer.Outside = (*Backend)(nil)

// TracesFromOutside reports whether a traced run is followed by strace
// (Linux with strace installed). A direct run has no barrier, so "outside"
// only means that the log is kept by the engine, not by the traced code.
func (*Backend) TracesFromOutside() (bool, string) { return tracer.Available() }

// traceCommand puts strace in front of the command when spec asks for a
// trace; it returns nil otherwise. strace starts with a fixed environment
// and the launcher gives the command its own.
func (b *Backend) traceCommand(cmd *exec.Cmd, spec *backends.Spec) (*tracer.Session, error) {
	if spec.Trace == nil {
		return nil, nil
	}
	return tracer.Wrap(cmd, spec.Trace, 0, b.opts.Launcher)
}
