package landlock

import "github.com/senclaw/sandbox/backends/tracer"

var _ tracer.Outside = (*Backend)(nil)

// TracesFromOutside reports whether a traced run is followed by strace
// from outside the sandbox: strace runs the helper as the engine's user,
// outside the Landlock domain, which the traced code can neither signal
// nor ptrace (seccomp, and Landlock's scoping from ABI 6).
func (b *Backend) TracesFromOutside() (bool, string) { return tracer.Available() }
