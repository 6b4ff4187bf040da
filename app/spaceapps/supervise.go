package spaceapps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/monitor"
)

// outcome is how one launch went.
type outcome struct {
	// launched: a process ran (else blocked before it: requirements,
	// port, refusal); healthy: it answered 2xx once.
	launched, healthy bool
	// clean: it ended with exit code 0.
	clean bool
	// healthyFor is how long it stayed up after it first answered.
	healthyFor time.Duration
	// why says in words how it ended, or why it did not start.
	why string
	// err is a refusal before the launch (a *app.FieldError,
	// *app.RefusedError, ...), for the caller of Start.
	err error
}

// Start starts app id by hand: it resets crash-looping, the backoff and
// the launch count, forgets a person's stop, and with wait returns once
// the first launch is healthy or has failed. Refusals before any launch
// (a requirement missing, the port taken, no isolation) are errors.
func (s *Supervisor) Start(ctx context.Context, id string, wait bool) (*StartReply, error) {
	a, err := s.find(id)
	if err != nil {
		return nil, err
	}
	if err := s.mayStart(ctx, a); err != nil {
		return nil, err
	}
	return s.start(a, true, wait)
}

// mayStart refuses a person's start of an unsandboxed app to anyone but
// the owner.
func (s *Supervisor) mayStart(ctx context.Context, a *appState) error {
	a.mu.Lock()
	set := a.rec.Sandbox
	a.mu.Unlock()
	return mayRunUnsandboxed(principal.Of(ctx), set)
}

// started is sent the first launch's outcome.
type started chan outcome

func (s *Supervisor) start(a *appState, manual, wait bool) (*StartReply, error) {
	a.op.Lock()
	a.mu.Lock()
	if manual && a.sup != nil && (a.state == StateBackoff || a.state == StateOutside || a.state == StatePortTaken) {
		// A person's start does not wait for the backoff, or for the
		// supervisor to see that the port's holder is gone: it starts
		// over, and looks at the port again.
		a.mu.Unlock()
		s.halt(a, restartedByPerson)
		a.mu.Lock()
	}
	if sup := a.sup; sup != nil {
		a.mu.Unlock()
		a.op.Unlock()
		if wait {
			<-sup.settled
			if sup.first.err != nil {
				return nil, sup.first.err
			}
		}
		a.mu.Lock()
		text := a.text
		a.mu.Unlock()
		v := s.view(a, false)
		return &StartReply{OK: v.State == StateRunning, Note: "it is already supervised: " + text, App: v}, nil
	}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.wg.Add(1) // held until the loop below is counted: Close waits for it
	}
	s.mu.Unlock()
	if closed {
		a.mu.Unlock()
		a.op.Unlock()
		return nil, &app.ConflictError{Reason: "the engine is stopping"}
	}
	defer s.wg.Done()
	if manual {
		a.rec.StoppedByUser, a.rec.Launches = false, 0
		a.failures, a.lastLog = nil, nil
		_ = s.save(a)
	}
	ctx, cancel := context.WithCancelCause(s.base)
	sup := &supervision{cancel: cancel, done: make(chan struct{}), settled: make(chan struct{})}
	a.sup = sup
	a.setState(StateStarting, "starting")
	a.mu.Unlock()
	first := make(started, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.supervise(ctx, a, sup, first)
	}()
	go func() {
		// The first launch always reports, once.
		sup.first = <-first
		close(sup.settled)
	}()
	a.op.Unlock()
	if !wait {
		return &StartReply{OK: true, Note: "launching", App: s.view(a, false)}, nil
	}
	<-sup.settled
	o := sup.first
	if o.err != nil {
		return nil, o.err
	}
	return &StartReply{OK: o.healthy, Note: o.why, App: s.view(a, false)}, nil
}

// Stop stops app id as a person asks: the supervisor does not restart it
// and autostart skips it until it is started again.
func (s *Supervisor) Stop(ctx context.Context, id string) (*AppView, error) {
	a, err := s.find(id)
	if err != nil {
		return nil, err
	}
	a.op.Lock()
	defer a.op.Unlock()
	a.mu.Lock()
	a.rec.StoppedByUser = true
	if err := s.save(a); err != nil {
		a.mu.Unlock()
		return nil, err
	}
	a.mu.Unlock()
	s.halt(a, stoppedByPerson)
	a.mu.Lock()
	if a.state != StatePortTaken && a.state != StateOutside {
		a.setState(StateStopped, "stopped by a person")
	}
	a.mu.Unlock()
	v := s.view(a, false)
	return &v, nil
}

// Restart stops app id (gracefully) and starts it again by hand.
func (s *Supervisor) Restart(ctx context.Context, id string, wait bool) (*StartReply, error) {
	a, err := s.find(id)
	if err != nil {
		return nil, err
	}
	if err := s.mayStart(ctx, a); err != nil {
		return nil, err
	}
	a.op.Lock()
	s.halt(a, restartedByPerson)
	a.op.Unlock()
	return s.start(a, true, wait)
}

// halt ends app a's supervision and its process, for why, and waits.
// a.op is held.
func (s *Supervisor) halt(a *appState, why stopCause) {
	a.mu.Lock()
	sup := a.sup
	a.mu.Unlock()
	if sup == nil {
		return
	}
	sup.cancel(why)
	<-sup.done
}

// supervise keeps app a running per its restart policy until ctx ends.
func (s *Supervisor) supervise(ctx context.Context, a *appState, sup *supervision, first started) {
	defer func() {
		a.mu.Lock()
		if a.sup == sup {
			a.sup = nil
		}
		a.mu.Unlock()
		close(sup.done)
	}()
	backoff := BackoffFirst
	for {
		o := s.launchOnce(ctx, a, first)
		first = nil
		if ctx.Err() != nil {
			a.mu.Lock()
			a.setState(StateStopped, "stopped")
			a.mu.Unlock()
			return
		}
		if !o.launched {
			return // launchOnce set the state: the person must act
		}
		now := s.clock.Now()
		a.mu.Lock()
		m := a.rec.Manifest.Runtime
		if o.healthyFor >= HealthyReset {
			backoff, a.failures = BackoffFirst, nil
		} else {
			a.failures = append(a.failures, now)
			recent := a.failures[:0]
			for _, f := range a.failures {
				if now.Sub(f) < GiveUpWindow {
					recent = append(recent, f)
				}
			}
			a.failures = recent
		}
		restart := m.Restart == RestartAlways || (m.Restart == RestartOnFailure && !(o.clean && o.healthy))
		if o.clean && !o.healthy && m.Restart == RestartOnFailure {
			restart = false // exit 0 is a success for on-failure, as for systemd
		}
		switch {
		case !restart:
			state := StateExited
			if !o.clean {
				state = StateFailed
			}
			a.lastLog = a.log.lastLines(20)
			a.setState(state, o.why+" (restart policy "+m.Restart+")")
			a.mu.Unlock()
			return
		case len(a.failures) >= GiveUpStarts:
			a.lastLog = a.log.lastLines(20)
			a.setState(StateCrashLooping, fmt.Sprintf("gave up after %d failed starts within %s; the last one: %s. Start it again once it is fixed", len(a.failures), GiveUpWindow, o.why))
			name := a.rec.Manifest.Name
			a.mu.Unlock()
			s.log.Warn("A Space App is crash-looping; it is no longer restarted.", "app", a.id, "why", o.why)
			s.attention(a.id, "crash-looping: "+name)
			return
		}
		a.nextAttempt = now.Add(backoff)
		a.setState(StateBackoff, fmt.Sprintf("%s; restarting in %s", o.why, backoff))
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			a.mu.Lock()
			a.setState(StateStopped, "stopped")
			a.mu.Unlock()
			return
		case <-s.clock.After(backoff):
		}
		backoff = min(backoff*2, BackoffMax)
	}
}

func (s *Supervisor) attention(id, what string) {
	if s.opts.OnAttention != nil {
		s.opts.OnAttention(id, what)
	}
}

// block ends a launch that could not start: state and the first caller
// learn why.
func (s *Supervisor) block(a *appState, first started, state string, err error) outcome {
	a.mu.Lock()
	a.setState(state, err.Error())
	a.lastLog = nil
	a.mu.Unlock()
	o := outcome{err: err, why: err.Error()}
	if first != nil {
		first <- o
	}
	return o
}

// launchOnce launches the app once and supervises that launch until it
// ends or ctx does.
func (s *Supervisor) launchOnce(ctx context.Context, a *appState, first started) outcome {
	a.mu.Lock()
	rec := *a.rec
	a.holder = nil
	a.setState(StateStarting, "checking what it requires")
	a.mu.Unlock()
	m, set := rec.Manifest, rec.Sandbox
	backend := s.effectiveBackend(ctx, set)
	if err := s.req.check(ctx, m.Requires, rec.Env, backend == "docker"); err != nil {
		return s.block(a, first, StateFailed, err)
	}
	port, err := s.portFor(ctx, a)
	if err != nil {
		var pc *portConflict
		if errors.As(err, &pc) {
			a.mu.Lock()
			a.holder = &pc.holder
			a.mu.Unlock()
			state := StatePortTaken
			if pc.outside {
				state = StateOutside
				s.attention(a.id, "needs restart: "+m.Name)
			}
			o := s.block(a, nil, state, err)
			// To the caller it is a conflict with what runs on this
			// machine; the state keeps who holds the port.
			o.err = &app.ConflictError{Reason: err.Error()}
			if first != nil {
				first <- o
			}
			return o
		}
		return s.block(a, first, StateFailed, err)
	}
	apiURL, apiPort := s.api()
	daemonAPI := set.DaemonAPI && apiPort > 0
	sb, err := s.e.PutAppSandbox(ctx, app.AppSandbox{
		ID: sandboxID(a.id), Name: "app:" + a.id, Dir: rec.Dir,
		Config: launchConfig(set, port), APIAccess: daemonAPI && set.Enabled, Tenant: rec.Tenant,
	})
	if err != nil {
		return s.block(a, first, StateFailed, err)
	}
	marker := "SENCLAW_APP_LAUNCH=" + randomHex(12)
	env := map[string]string{}
	for k, v := range rec.Env {
		env[k] = v
	}
	env["PORT"] = fmt.Sprint(port)
	env["SENCLAW_APP_ID"] = a.id
	k, v, _ := strings.Cut(marker, "=")
	env[k] = v
	token := ""
	if daemonAPI {
		token = s.issueToken(a.id)
		env["SENCLAW_API_URL"], env["SENCLAW_APP_TOKEN"] = apiURL, token
	}
	if !set.Enabled {
		env["HOME"] = rec.Dir
		tmp, err := s.privateTmp(a.id)
		if err != nil {
			s.revokeToken(token)
			return s.block(a, first, StateFailed, err)
		}
		env["TMPDIR"] = tmp
	}
	command := m.Runtime.Start
	if backend == "docker" {
		command = imagePrelude(m.Requires) + command
	}
	a.log.hold()
	l, err := s.e.Launch(s.base, sb.ID, app.RunRequest{Source: app.SourceSpaceApp, Command: command, Env: env},
		app.LaunchOptions{Output: a.log, Unconfined: !set.Enabled})
	if err != nil {
		s.revokeToken(token)
		a.log.banner(fmt.Sprintf("launch of %q refused at %s: %v", a.id, s.clock.Now().UTC().Format(time.RFC3339), err))
		return s.block(a, first, StateFailed, err)
	}
	started := l.Record()
	now := s.clock.Now()
	a.mu.Lock()
	a.rec.Launches++
	a.rec.TotalLaunches++
	facts := &LaunchFacts{
		N: a.rec.TotalLaunches, At: now.UTC(), RunID: started.ID, Pid: l.Pid(),
		Isolation: started.Isolation, Backend: started.Backend, Settings: set,
		Registration: rec.Registration, Command: m.Runtime.Start, Port: port,
		Marker: marker, UID: s.runUID(a.id),
	}
	a.rec.Last = facts
	_ = s.save(a)
	a.run, a.startedAt, a.healthySince, a.token = l, now, time.Time{}, token
	a.env = maskEnv(env)
	a.health = health{status: HealthUnknown}
	a.setState(StateStarting, fmt.Sprintf("waiting for a 2xx on %s (up to %d s)", m.Runtime.HealthPath, m.Runtime.StartTimeoutSec))
	a.mu.Unlock()
	a.log.banner(s.bannerLine(a.id, facts, rec))

	o := s.watch(ctx, a, l, port, m.Runtime, first)
	o.launched = true
	s.revokeToken(token)
	ended := s.clock.Now().UTC()
	a.mu.Lock()
	a.run, a.token = nil, ""
	a.health.status = HealthUnknown // what it said is kept in the history
	if a.rec.Last != nil && a.rec.Last.RunID == facts.RunID {
		a.rec.Last.EndedAt, a.rec.Last.Ended = &ended, o.why
		_ = s.save(a)
	}
	a.mu.Unlock()
	return o
}

// watch waits for the launch to become healthy, then probes it until it
// ends or ctx does (then it stops it gracefully).
func (s *Supervisor) watch(ctx context.Context, a *appState, l *app.Launched, port int, rt ManifestRuntime, first started) outcome {
	report := func(o outcome) {
		if first != nil {
			first <- o
			first = nil
		}
	}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, rt.HealthPath)
	deadline := s.clock.Now().Add(time.Duration(rt.StartTimeoutSec) * time.Second)
	ok, exited := s.awaitHealthy(ctx, a, l, port, url, deadline)
	switch {
	case ctx.Err() != nil:
		s.stopLaunch(a, l, rt, stopReason(ctx))
		o := outcome{why: "stopped before it answered"}
		report(o)
		return o
	case exited:
		o := outcome{why: "it ended before it answered on " + rt.HealthPath + ": " + endedHow(l.Result())}
		o.clean = exitedClean(l.Result())
		report(o)
		return o
	case !ok:
		s.stopLaunch(a, l, rt, fmt.Sprintf("no 2xx on %s within %d s", rt.HealthPath, rt.StartTimeoutSec))
		o := outcome{why: fmt.Sprintf("it did not answer 2xx on %s within %d s", rt.HealthPath, rt.StartTimeoutSec)}
		report(o)
		return o
	}
	healthyAt := s.clock.Now()
	a.mu.Lock()
	a.healthySince = healthyAt
	a.setState(StateRunning, "running")
	a.mu.Unlock()
	report(outcome{launched: true, healthy: true, why: "it answered on " + rt.HealthPath})
	for {
		select {
		case <-l.Done():
			res := l.Result()
			return outcome{healthy: true, clean: exitedClean(res), healthyFor: s.clock.Now().Sub(healthyAt), why: "it ended: " + endedHow(res)}
		case <-ctx.Done():
			s.stopLaunch(a, l, rt, stopReason(ctx))
			return outcome{healthy: true, clean: true, healthyFor: s.clock.Now().Sub(healthyAt), why: "stopped"}
		case <-s.clock.After(ProbeEvery):
			s.probe(ctx, a, url)
		}
	}
}

// awaitHealthy probes url until a 2xx, the launch's end, the deadline (on
// the supervisor's clock) or ctx's end. Looks come every 5 ms for the
// first 3 s (a fast server is seen at once), then less often.
func (s *Supervisor) awaitHealthy(ctx context.Context, a *appState, l *app.Launched, port int, url string, deadline time.Time) (ok, exited bool) {
	began := time.Now()
	for {
		// Until the server listens (seen in its own network namespace,
		// without a connection), an HTTP probe of a sandboxed one would
		// only wake the proxy and the forwarder in vain.
		if pids := l.Pids(); len(pids) == 0 || monitor.ListensOn(ctx, pids, port) {
			if code, latency, err := probeOnce(ctx, url); err == nil {
				a.mu.Lock()
				a.health.record(s.clock.Now(), code, latency, nil)
				a.mu.Unlock()
				return true, false
			}
		}
		gap := 5 * time.Millisecond
		switch since := time.Since(began); {
		case since > 20*time.Second:
			gap = 500 * time.Millisecond
		case since > 3*time.Second:
			gap = 100 * time.Millisecond
		}
		select {
		case <-l.Done():
			return false, true
		case <-ctx.Done():
			return false, false
		case <-time.After(gap):
		}
		if !s.clock.Now().Before(deadline) {
			return false, false
		}
	}
}

// stopLaunch ends a launch as supervisord does: SIGTERM to the whole
// tree, SIGKILL after the stop timeout.
func (s *Supervisor) stopLaunch(a *appState, l *app.Launched, rt ManifestRuntime, why string) {
	a.mu.Lock()
	a.setState(StateStopping, "stopping: "+why)
	a.mu.Unlock()
	if err := l.Terminate(why); err != nil {
		s.log.Warn("SIGTERM to a Space App's tree failed; killing it.", "app", a.id, "err", err)
		l.Kill(why)
	}
	select {
	case <-l.Done():
		return
	case <-time.After(time.Duration(rt.StopTimeoutSec) * time.Second):
	}
	s.log.Info("A Space App did not end within its stop timeout; killing its tree.", "app", a.id, "stopTimeoutSec", rt.StopTimeoutSec)
	l.Kill(why + " (killed after the stop timeout)")
	<-l.Done()
}

// endedHow says how a run ended.
func endedHow(r app.RunRecord) string {
	switch {
	case r.Killed != "":
		return r.Killed
	case r.ExitCode != nil:
		return fmt.Sprintf("exit code %d", *r.ExitCode)
	case r.Error != "":
		return r.Error
	}
	return "it ended"
}

func exitedClean(r app.RunRecord) bool {
	return r.ExitCode != nil && *r.ExitCode == 0 && r.Killed == ""
}

func isNone(isolation string) bool { return strings.HasPrefix(isolation, "none") }
