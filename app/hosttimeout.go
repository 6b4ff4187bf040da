package app

import (
	"context"
	"time"
)

// Host exec is short (GoClaw's short timeouts): a command a documented
// off path sends to this machine gets exec.hostTimeoutSeconds when its
// request gives no timeout, and a principal other than the owner gets no
// more than that whatever it asks for. Its output is capped like every
// run's (OutputCap), and on timeout its whole process tree is killed:
// the run's cgroup, else the direct backend's subreaper or the Landlock
// helper's, so a process that left the run's session (setsid) and
// ignores SIGTERM goes with it.
const (
	DefaultHostTimeoutSeconds = 60
	MaxHostTimeoutSeconds     = 86400
)

// hostTimeout is the setting now.
func (e *Engine) hostTimeout() time.Duration {
	s := e.Settings().Exec.HostTimeoutSeconds
	if s <= 0 {
		s = DefaultHostTimeoutSeconds
	}
	return time.Duration(s) * time.Second
}

// boundHostRun gives p, a run an off path sends to the host, the host
// exec timeout. An interactive session (a person at a terminal, the
// agent shell with no command) is not bounded so: it ends with the
// person, or with the timeout it asked for, as everywhere.
func (e *Engine) boundHostRun(ctx context.Context, p *plan) {
	if p.launch != nil || p.req.Background || (p.req.Attach != nil && p.req.Attach.Interactive) {
		return
	}
	limit := e.hostTimeout()
	owner := p.principal(ctx).IsOwner()
	switch {
	case p.req.TimeoutMs == 0:
		p.timeout = limit
	case !owner && p.timeout > limit:
		p.timeout = limit
	}
}
