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
// asks for it; nil when it does not.
func offerUnixGuard(spec *backends.Spec) (*unixguard.Handoff, error) {
	if spec.UnixGuard == nil {
		return nil, nil
	}
	pol := unixGuardPolicy(spec)
	if spec.Net != nil {
		pol.Plumbing = &unixguard.Bind{Host: spec.Net.Dir, Inside: netfwd.MountDir}
	}
	h, err := unixguard.NewHandoff(pol)
	if err != nil {
		return nil, &RefusedError{Reason: err.Error()}
	}
	return h, nil
}

// traceConnects reports the connects the guard answers to the run's
// trace: strace no longer sees them (the guard's notification wins over
// its seccomp stop). The forwarder's own relays are machinery: the
// carrier's, and any connect to the plumbing's sockets, as traceCommand
// drops them from strace (a relay made on a thread or a process other
// than the carrier's was reported as the run's own).
func traceConnects(spec *backends.Spec) func(unixguard.Connect) {
	var mu sync.Mutex
	plumbing := "unix:" + netfwd.MountDir + "/"
	return func(c unixguard.Connect) {
		if spec.Net != nil && (c.Carrier || strings.HasPrefix(c.Target, plumbing)) {
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
		if said := helperSaid(p.stderr.head()); said != "" {
			err = fmt.Errorf("%w; the forwarder (senclaw-netfwd) said: %s", err, said)
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

// helperSaid picks what the forwarder wrote to stderr before it died, for
// the refusal: its own "senclaw-netfwd: " line when it wrote one, else the
// first lines whatever they are (a Go runtime's "fatal error: ..." when it
// could not even start). Nothing of the sandbox has run before the guard
// is handed over, so all of it is the forwarder's or bwrap's.
func helperSaid(stderr string) string {
	var first []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "senclaw-netfwd: ") {
			return line
		}
		if line != "" && len(first) < 3 {
			first = append(first, line)
		}
	}
	said := strings.Join(first, " / ")
	if len(said) > 400 {
		said = said[:400] + "..."
	}
	return strings.ToValidUTF8(said, "?")
}
