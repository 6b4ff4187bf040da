//go:build !linux

package direct

import (
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/tracer"
)

// traced returns p as the engine sees it; outside Linux there is no
// strace, and the Session only marks the run untraced.
func traced(tr *tracer.Session, p *process) backends.Process { return tr.Process(p) }
