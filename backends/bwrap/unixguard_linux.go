package bwrap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/tracer"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// unixGuarded says in words what the guard enforces, for Enforcement.
const unixGuarded = "unix sockets: connect() checked by the engine (seccomp user notification); only sockets in the workspace and the private /tmp, the engine's proxy and the settings' allowedSockets are reachable, and no Unix datagram socket can be made"

// noGuard begins the reason of a run refused for its guard.
const noGuard = "the Unix socket guard could not be set up, and no run goes without it: "

// offerUnixGuard prepares the handoff of the Unix socket guard when spec
// asks for it (issue #10); nil when it does not.
func offerUnixGuard(spec *backends.Spec) (*unixguard.Handoff, error) {
	if spec.UnixGuard == nil {
		return nil, nil
	}
	pol := unixGuardPolicy(spec)
	if spec.Net != nil {
		pol.Plumbing = &unixguard.Bind{Host: spec.Net.Dir, Inside: netfwd.MountDir}
	}
	if spec.Trace != nil {
		pol.Observe = traceConnects(spec)
	}
	h, err := unixguard.NewHandoff(pol)
	if err != nil {
		return nil, &RefusedError{Reason: err.Error()}
	}
	return h, nil
}

// traceConnects reports the connects the guard answers to the run's
// trace: strace no longer sees them (the guard's notification wins over
// its seccomp stop). The forwarder's own relays are machinery.
func traceConnects(spec *backends.Spec) func(unixguard.Connect) {
	var mu sync.Mutex
	return func(c unixguard.Connect) {
		if c.Carrier && spec.Net != nil {
			return
		}
		ev := tracer.ConnectEvent(c.Target, c.Errno)
		ev.TimeMs, ev.Pid, ev.Source = time.Now().UnixMilli(), c.Pid, tracer.SourceEngine
		mu.Lock()
		defer mu.Unlock()
		spec.Trace(ev)
	}
}

// superviseUnixGuard starts the supervisor of the guard that the engine
// loaded itself (directUnixGuard), once bwrap has built the sandbox whose
// first process it watches (Direct.Watch), and keeps it until the run is
// over. On failure the run must end.
func superviseUnixGuard(g *directGuard, p *process) error {
	sup, err := g.Supervise()
	if err != nil {
		return &RefusedError{Reason: noGuard + err.Error()}
	}
	if sup != nil {
		go func() {
			<-p.done
			sup.Close()
		}()
	}
	p.enf.Limits = append(p.enf.Limits, unixGuarded)
	return nil
}

// acceptUnixGuard takes the guard over from the sandbox's forwarder and
// supervises it until the run is over. On failure the run must end: the
// error says why, with the forwarder's own message when it gave one.
func acceptUnixGuard(ctx context.Context, h *unixguard.Handoff, childPid int, p *process) error {
	sup, err := h.Accept(ctx, childPid, p.done)
	if err != nil {
		// Nothing goes on, at once; a forwarder that failed has said why
		// on stderr, which is all read once the run is over, and so has
		// bwrap when it could not set the sandbox up (it ran no forwarder
		// then).
		_ = p.Kill()
		select {
		case <-p.done:
			var se *SetupError
			if _, werr := p.Wait(); errors.As(werr, &se) {
				return se
			}
			if line, _, _ := strings.Cut(p.stderr.head(), "\n"); strings.HasPrefix(line, "bwrap: ") {
				return &SetupError{Message: line}
			}
		case <-time.After(5 * time.Second):
		}
		for _, line := range strings.Split(p.stderr.head(), "\n") {
			if strings.HasPrefix(line, "senclaw-netfwd: ") {
				err = fmt.Errorf("%w (%s)", err, line)
				break
			}
		}
		return &RefusedError{Reason: noGuard + err.Error()}
	}
	go func() {
		<-p.done
		sup.Close()
	}()
	p.enf.Limits = append(p.enf.Limits, unixGuarded)
	return nil
}
