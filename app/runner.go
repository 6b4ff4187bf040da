package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/backends"
)

// RunRequest asks for one execution. Exactly one of Command, Argv or
// Language+Code says what to run.
type RunRequest struct {
	Source string `json:"source,omitempty"`
	// Command is a shell command line, run with /bin/sh -c.
	Command string `json:"command,omitempty"`
	// Argv is an exact argument vector.
	Argv []string `json:"argv,omitempty"`
	// Language (python, node, bash) and Code: a code run.
	Language string            `json:"language,omitempty"`
	Code     string            `json:"code,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	// TimeoutMs overrides the sandbox's timeout for this run (0: keep).
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// Background starts the run and returns at once; its output goes to
	// a log file in the workspace. A background run has no deadline
	// unless TTLMs is given: it runs until it ends, is killed, its sandbox
	// is stopped or deleted, or the engine stops (or IdleTTLMs passes).
	Background bool `json:"background,omitempty"`
	// TTLMs, for a background run, kills it after this many milliseconds
	// (1 s to 30 days); 0 means no deadline.
	TTLMs int `json:"ttlMs,omitempty"`
	// IdleTTLMs, for a background run, kills it once its processes have
	// used no CPU and written no output for this long (1 s to 30 days).
	IdleTTLMs int `json:"idleTtlMs,omitempty"`
	// Stdout and Stderr, when set, also receive the output as it comes
	// (the CLI streams it).
	Stdout io.Writer `json:"-"`
	Stderr io.Writer `json:"-"`
	// Trace traces this run even when its sandbox does not (trace.go).
	Trace bool `json:"trace,omitempty"`
	// Attach, when set, keeps a foreground run connected to its caller:
	// stdin, a terminal, resizes and signals (attach.go).
	Attach *Attachment `json:"-"`
	// Agent names the agent whose shell asked for the run (claude-code,
	// gemini-cli, shell), for the record; "" when none said.
	Agent string `json:"-"`
	// ScheduleID is the schedule firing this run; only SchedulerScript
	// sets it (schedules.go).
	ScheduleID string `json:"-"`
}

// RunResult is a finished (or, in the background, started) run: its
// record and the output kept (up to OutputCap per stream).
type RunResult struct {
	Record RunRecord `json:"run"`
	Stdout string    `json:"stdout"`
	Stderr string    `json:"stderr"`
}

// plan is a request resolved against its sandbox and the policy: the input
// of the single gate.
type plan struct {
	sb      *Sandbox
	req     RunRequest
	kind    string
	argv    []string
	display string
	// offPath: a documented "off" switch sends this run directly to the
	// host; its record says "none".
	offPath bool
	// hostConfined: the host exec's command (an off path's, a direct
	// sandbox's) runs under a Landlock domain of its own
	// (hostconfine.go), as every principal's but the owner's does where
	// Landlock is; its record says "landlock (host exec)".
	hostConfined bool
	// by is who the run is for when that is not the caller (a
	// schedule's maker); nil: principal.Of the run's context.
	by *principal.Principal
	// timeout kills the run after this long; 0 (a background run without
	// a TTL) means never.
	timeout time.Duration
	// idle kills a background run after this long without CPU or output.
	idle time.Duration
	// codeFile is written into the workspace before the run.
	codeFile, code string
	// refusal, when set, is a policy refusal the gate records instead of
	// running (schedules.go).
	refusal error
	// launch is set for a supervised background run (Launch, launch.go):
	// its output goes to the launch's writer, it has no timeout, and the
	// launch hears of its start and its end.
	launch *Launched
	// keepSandboxUser runs an off-path run as the sandbox user all the
	// same (an unconfined Space App of a root engine).
	keepSandboxUser bool
	// newWorkspace: the gate makes the (one-shot) sandbox's workspace,
	// once the run is on disk as running, so that a crash leaves nothing
	// the next start does not know of.
	newWorkspace bool
	// admitted, when set, is the run's place in the runner, taken already
	// (with the disk checked): the gate does not wait for another.
	admitted func()
	// cwd is where the command starts, when not the workspace (the agent
	// shell's folder in the project), for the shell guard.
	cwd string
	// runID is the record's id, for the shell guard's events; guarded
	// is what the guard matched in a run it let go on (warn).
	runID   string
	guarded []string
	// policyNotes say what the project's policy file ignored or took
	// down (projectpolicy.go), for the record.
	policyNotes []string
	// dryRun: the plan is only judged (PolicyCheck), never run; the
	// guard records no event for it.
	dryRun bool
	// learn collects what the proxy let through for the run into
	// reached (PolicyLearn).
	learn   bool
	reached *runRefusals
	// usage samples a learn run's process tree (learnusage.go).
	usage *learnUsage
	// project is the folder whose policy file bounded the run (its
	// record's ProjectDir).
	project string
}

// Exec runs req in the persistent sandbox id.
func (e *Engine) Exec(ctx context.Context, id string, req RunRequest) (*RunResult, error) {
	// The owner's hand edit of its policy file holds from this run on.
	if _, err := e.ownerPolicyFresh(); err != nil {
		return nil, asRefusal(err)
	}
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	p, err := e.planFor(sb, req)
	if err != nil {
		return nil, err
	}
	return e.run(ctx, p)
}

// RunOnce runs req in a throwaway sandbox made from cfg. The sandbox and
// its files are removed afterwards (after the run ends, for a background
// run); the run's record stays.
func (e *Engine) RunOnce(ctx context.Context, cfg SandboxConfig, req RunRequest) (*RunResult, error) {
	if _, err := e.ownerPolicyFresh(); err != nil {
		return nil, asRefusal(err)
	}
	if res, err, ok := e.runAhead(ctx, cfg, req); ok {
		return res, err
	}
	return e.oneShot(ctx, cfg, req, nil)
}

// oneShot is RunOnce in a sandbox made for the run. admitted, when set,
// is the place in the runner the run holds already (runAhead's, which
// gave up the sandbox made ahead it had taken); it is given back once
// the run is over, or now if it does not start.
func (e *Engine) oneShot(ctx context.Context, cfg SandboxConfig, req RunRequest, admitted func()) (*RunResult, error) {
	defer func() {
		if admitted != nil {
			admitted()
		}
	}()
	sb, err := e.newSandboxFor(principal.Of(ctx).Tenant, cfg)
	if err != nil {
		return nil, err
	}
	sb.Kind = "oneshot"
	if cfg.Name == nil {
		sb.Name = "one-shot"
	}
	var policyNotes []string
	var policyErr error
	if cfg.ProjectDir != nil {
		// senclaw run --here: the project's policy file bounds it.
		req.Env = maps.Clone(req.Env)
		policyNotes, policyErr = e.applyProjectPolicy(&sb, req.Env, false, cfg)
	}
	p, err := e.planFor(&sb, req)
	if err != nil {
		return nil, err
	}
	p.policyNotes = policyNotes
	if cfg.ProjectDir != nil {
		p.project = sb.Workspace
	}
	if policyErr != nil {
		p.refusal = asRefusal(policyErr) // recorded as the run's refusal
	}
	if err := e.takeUID(&sb); err != nil {
		return nil, err
	}
	p.kind, p.newWorkspace = "oneshot", true
	p.admitted, admitted = admitted, nil // run gives it back
	res, err := e.run(ctx, p)
	if res == nil || res.Record.State != "running" {
		e.purgeAfter(&sb)
	}
	return res, err
}

// planFor validates req against sb.
func (e *Engine) planFor(sb *Sandbox, req RunRequest) (*plan, error) {
	p := &plan{sb: sb, req: req, kind: "exec"}
	given := 0
	if strings.TrimSpace(req.Command) != "" {
		given++
		p.argv = []string{"/bin/sh", "-c", req.Command}
		p.display = req.Command
	}
	if len(req.Argv) > 0 {
		given++
		p.argv = req.Argv
		p.display = backends.ShellJoin(req.Argv)
	}
	if req.Language != "" || req.Code != "" {
		given++
		if err := e.planCode(p); err != nil {
			return nil, err
		}
	}
	switch {
	case given == 0:
		return nil, badField("command", "", "nothing to run: give a command, an argv, or language and code")
	case given > 1:
		return nil, badField("command", p.display, "give only one of command, argv, or language and code")
	}
	if err := checkCommand(req); err != nil {
		return nil, err
	}
	if err := checkEnv("env", req.Env); err != nil {
		return nil, err
	}
	if err := checkSecretEnv("env", req.Env, sb.Secrets); err != nil {
		return nil, err
	}
	if req.Source != "" && !slices.Contains(runSources, req.Source) {
		return nil, badField("source", req.Source, "is not a run source: use one of %s", strings.Join(runSources, ", "))
	}
	if a := req.Attach; a != nil {
		if req.Background {
			return nil, badField("background", true, "an attached run stays in the foreground; drop background or the attachment")
		}
		t, err := checkTerminal(a.Terminal)
		if err != nil {
			return nil, err
		}
		checked := *a
		checked.Terminal = t
		p.req.Attach = &checked
	}
	timeout := sb.TimeoutMs
	if req.TimeoutMs != 0 {
		if err := checkTimeout("timeoutMs", req.TimeoutMs); err != nil {
			return nil, err
		}
		timeout = req.TimeoutMs
	}
	p.timeout = time.Duration(timeout) * time.Millisecond
	if a := req.Attach; a != nil && a.Interactive && req.TimeoutMs == 0 {
		p.timeout = 0 // a person's session ends with them (Attachment)
	}
	if err := planLifetime(p); err != nil {
		return nil, err
	}
	return p, nil
}

// planLifetime sets how long a background run may live: until it is
// stopped, unless a TTL or an idle TTL is given. A foreground run keeps
// its timeout; the TTLs are for background runs only.
func planLifetime(p *plan) error {
	req := p.req
	if !req.Background {
		switch {
		case req.TTLMs != 0:
			return badField("ttlMs", req.TTLMs, "is for background runs; a foreground run has timeoutMs")
		case req.IdleTTLMs != 0:
			return badField("idleTtlMs", req.IdleTTLMs, "is for background runs; a foreground run has timeoutMs")
		}
		return nil
	}
	if req.TimeoutMs != 0 {
		return badField("timeoutMs", req.TimeoutMs, "does not apply to a background run, which runs until it is stopped; give ttlMs for a deadline")
	}
	p.timeout = 0
	for _, f := range []struct {
		name string
		v    int
	}{{"ttlMs", req.TTLMs}, {"idleTtlMs", req.IdleTTLMs}} {
		if f.v != 0 {
			if err := checkRange(f.name, f.v, MinTimeoutMs, MaxTTLMs, " ms (1 s to 30 days)"); err != nil {
				return err
			}
		}
	}
	p.timeout = time.Duration(req.TTLMs) * time.Millisecond
	p.idle = time.Duration(req.IdleTTLMs) * time.Millisecond
	return nil
}

// MaxTTLMs bounds a background run's TTL and idle TTL: 30 days.
const MaxTTLMs = 30 * 24 * 3600 * 1000

// run is the single gate: every execution passes here. It applies the
// policy, picks the backend (never a weaker one than asked), starts the
// process, enforces the timeout and the disk quota, and records what
// isolation the run really got, refusals included. (A one-shot the engine
// has a sandbox ready for passes the same checks in runAhead.)
func (e *Engine) run(ctx context.Context, p *plan) (*RunResult, error) {
	if res, err, ok := e.runReady(ctx, p); ok {
		return res, err
	}
	rec := e.newRecord(ctx, p)
	release := p.admitted
	if release == nil {
		if err := e.roomOnDisk(); err != nil {
			return e.refuse(&rec, err)
		}
		var err error
		if release, err = e.admit(ctx, p.sb.ID, p.req.Background); err != nil {
			return e.refuse(&rec, err)
		}
	}
	if tenantDone, err := e.admitTenant(p.sb.Tenant); err != nil {
		release()
		return e.refuse(&rec, err)
	} else if p.sb.Tenant != "" {
		all := release
		release = func() { tenantDone(); all() }
	}
	// The slot goes back when the run is over (e.started), or now when it
	// does not start.
	owned := true
	defer func() {
		if owned {
			release()
		}
	}()
	// The run is on disk as running before anything of it
	// exists (workspace, cgroup, container, process): an engine that
	// dies leaves its record, closed as killed at the next start, which
	// also removes what it left.
	if err := e.recordRunning(rec); err != nil {
		return e.refuse(&rec, err)
	}
	if p.newWorkspace {
		if err := e.makeWorkspace(p.sb); err != nil {
			return e.refuse(&rec, err)
		}
	}
	p.runID = rec.ID
	backend, isolation, err := e.choose(ctx, p)
	if err != nil {
		return e.refuse(&rec, err)
	}
	rec.Backend, rec.Isolation, rec.Guard = backend.Name(), isolation, p.guarded
	r, err := e.prepare(p, &rec, backend, isolation)
	if err != nil {
		return e.refuse(&rec, err)
	}
	start := time.Now()
	proc, err := backend.Start(ctx, r.spec)
	if err != nil {
		r.abandon()
		e.linkLost(p.sb, err)
		if p.sb.Engine != "" {
			return e.refuse(&rec, fmt.Errorf("%s on engine %s could not start the sandbox: %w", backend.Name(), p.sb.Engine, err))
		}
		return e.refuse(&rec, fmt.Errorf("%s could not start the sandbox: %w", backend.Name(), err))
	}
	owned = false
	res := e.started(ctx, p, rec, r, proc, start, release)
	e.readyAfter(p, nil) // its next run is started ahead (ready.go)
	return res, nil
}

// newRecord is the record of p's run, before it starts, for the
// principal ctx carries.
func (e *Engine) newRecord(ctx context.Context, p *plan) RunRecord {
	rec := RunRecord{
		ID:          e.newRunID(),
		SandboxID:   p.sb.ID,
		SandboxName: p.sb.Name,
		Engine:      p.sb.Engine,
		Source:      p.req.Source,
		Tenant:      p.sb.Tenant,
		Principal:   principal.Of(ctx).Label(),
		Kind:        p.kind,
		Command:     truncateRunes(p.display, 2000),
		Language:    p.req.Language,
		Network:     p.sb.Network || len(p.sb.Ports.Connect) > 0,
		Background:  p.req.Background,
		TTLMs:       p.req.TTLMs,
		IdleTTLMs:   p.req.IdleTTLMs,
		Agent:       p.req.Agent,
		StartedAt:   e.now().UTC(),
		State:       "done",
		ScheduleID:  p.req.ScheduleID,
		Policy:      p.policyNotes,
		ProjectDir:  p.project,
	}
	if rec.Source == "" {
		rec.Source = SourceCLI
	}
	if !p.req.Background && p.launch == nil {
		rec.TimeoutMs = int(p.timeout / time.Millisecond) // a background run's is its TTL
	}
	if u, _ := e.runUser(p); u != nil {
		rec.UID = u.UID
	}
	return rec
}

// recordRunning puts rec on disk as running, synced so that a crash
// leaves its record, with edits of the sandboxes made ahead in the same
// commit.
func (e *Engine) recordRunning(rec RunRecord, ahead ...store.AheadEdit) error {
	rec.State = "running"
	if err := e.records.saveNow(rec, ahead...); err != nil {
		return fmt.Errorf("the run could not be recorded, so nothing was started: %w", err)
	}
	return nil
}

// prepared is what a run holds from its spec to its start: what the
// backend is to start, and what is let go once the run is over or did
// not start.
type prepared struct {
	backend   backends.Backend
	isolation string
	spec      *backends.Spec
	disk      diskQuota
	tr        *runTrace
	// unguarded and unprotected are what the Unix socket guard and the
	// placeholders of autorun files could not do, for the record.
	unguarded, unprotected string
	// caches is the record's line about the run's package caches.
	caches     string
	releaseNet func()
	// refusals collects what the sandbox is refused while the run goes.
	refusals       *runRefusals
	stdout, stderr *cappedBuffer
	// output is both streams of a foreground run in their order, for
	// `senclaw logs` while it goes on.
	output  *outputRing
	logFile *os.File
	at      *attached
}

// prepare builds the spec of p's run on backend and sets up what the run
// needs around it (disk quota, trace, Unix socket guard, network,
// output, attachment). rec has the run's id and backend.
func (e *Engine) prepare(p *plan, rec *RunRecord, backend backends.Backend, isolation string) (*prepared, error) {
	r := &prepared{backend: backend, isolation: isolation}
	remote := remoteSandbox(p.sb)
	if !remote {
		// (A remote sandbox's workspace is a volume there: startedDisk.)
		r.disk = e.prepareDisk(p.sb, backend)
	}
	spec, err := e.spec(p, rec)
	if err != nil {
		return nil, err
	}
	r.spec = spec
	r.caches = e.packageCaches(p, rec.Backend, spec)
	releaseAutorun, unprotected, err := func() (func(), string, error) {
		if remote {
			// No folder of this machine is in a remote sandbox (its
			// mounts are copies): there is nothing of the person's to
			// keep read-only there.
			return func() {}, "", nil
		}
		return e.protectAutorun(p, rec.Backend, spec)
	}()
	if err != nil {
		return nil, err
	}
	r.unprotected = unprotected
	r.tr = e.traceRun(p, rec, backend, spec) // tracing (trace.go)
	// The Unix socket guard (unixsockets.go).
	if r.unguarded, err = e.guardUnixSockets(backend, spec); err != nil {
		releaseAutorun()
		r.tr.discard()
		return nil, err
	}
	releasePlumbing, err := e.plumbNetwork(p, backend, spec)
	if err != nil {
		releaseAutorun()
		r.tr.discard()
		return nil, err
	}
	// The secrets' placeholders (egress.go), held while the run goes.
	secretEnv, releaseSecrets, err := e.runSecrets(p.sb)
	if err != nil {
		releasePlumbing()
		releaseAutorun()
		r.tr.discard()
		return nil, err
	}
	if len(secretEnv) > 0 {
		spec.Env = append(spec.Env, secretEnv...)
		slices.Sort(spec.Env)
	}
	sbID := p.sb.ID
	r.refusals = e.refusals.watch(sbID)
	if p.learn {
		p.reached = e.reached.watch(sbID)
	}
	spec.Refused = func(target string) { e.guardRefused(sbID, target) }
	// What a run holds for its length (the network, the placeholders)
	// goes with one call, once the run is over or did not start.
	r.releaseNet = func() {
		releasePlumbing()
		releaseAutorun()
		releaseSecrets()
		e.refusals.stop(sbID, r.refusals)
		e.reached.stop(sbID, p.reached)
	}
	r.output = &outputRing{}
	r.stdout = newCappedBuffer(OutputCap, teeTo(p.req.Stdout, r.output))
	r.stderr = newCappedBuffer(OutputCap, teeTo(p.req.Stderr, r.output))
	if p.launch != nil {
		spec.Stdout, spec.Stderr = p.launch.output, p.launch.output
	} else if p.req.Background {
		open := e.openRunLog
		if remote {
			open = e.remoteLogFile
		}
		if r.logFile, err = open(p.sb, rec.ID); err != nil {
			r.releaseNet()
			r.tr.discard()
			return nil, err
		}
		spec.Stdout, spec.Stderr = r.logFile, r.logFile
		rec.LogFile = r.logFile.Name()
	} else {
		spec.Stdout, spec.Stderr = r.stdout, r.stderr
	}
	if r.at, err = e.attach(p, backend, spec, rec, r.stdout, r.stderr); err != nil {
		if r.logFile != nil {
			r.logFile.Close()
		}
		r.releaseNet()
		r.tr.discard()
		return nil, err
	}
	return r, nil
}

// abandon lets go of what a run that did not start held.
func (r *prepared) abandon() {
	if r.logFile != nil {
		r.logFile.Close()
	}
	r.at.finish()
	r.releaseNet()
	r.tr.discard() // tracing (trace.go)
}

// started records what the started run got, supervises it and records
// its end: in the foreground before it returns, for a background run in
// a goroutine of its own (it returns the record of the run going).
// release gives the run's slot back; it is called once the run is over.
func (e *Engine) started(ctx context.Context, p *plan, rec RunRecord, r *prepared, proc backends.Process, start time.Time, release func()) *RunResult {
	backend, isolation := r.backend, r.isolation
	enf := proc.Enforcement()
	r.tr.started(enf) // tracing (trace.go)
	rec.Enforced, rec.Missing = enf.Limits, enf.Missing
	if r.unguarded != "" {
		rec.Missing = append(rec.Missing, r.unguarded)
	}
	if r.unprotected != "" {
		rec.Missing = append(rec.Missing, r.unprotected)
	}
	disk := e.startedDisk(p, backend, r.disk)
	if line := disk.line(p.sb); line != "" {
		rec.Enforced = append(rec.Enforced, line)
	}
	if line := e.tenantLine(p.sb); line != "" {
		rec.Enforced = append(rec.Enforced, line)
	}
	if r.caches != "" {
		rec.Enforced = append(rec.Enforced, r.caches)
	}
	if backend.Name() == "direct" && wantsNetwork(p.sb) {
		rec.Missing = append(rec.Missing, "network: the direct backend enforces nothing; the network switch, port and domain rules are advisory only")
	}
	if isolation != isolationNone && isolation != isolationDegraded && isolation != isolationHostExec && enf.Isolation != "" {
		rec.Isolation = enf.Isolation
	}
	lr := &liveRun{id: rec.ID, sandboxID: p.sb.ID, command: rec.Command, started: start, proc: proc, done: make(chan struct{}), logFile: rec.LogFile, workspace: p.sb.Workspace}
	if rec.LogFile == "" && p.launch == nil {
		lr.output = r.output
	}
	e.live.add(lr)
	r.at.started(proc, rec)
	if p.learn {
		p.usage = watchUsage(proc)
	}
	if p.sb.Kind != "oneshot" {
		e.records.touch(p.sb.ID, e.now().UTC())
	}
	finish := func() *RunResult {
		status, waitErr := e.supervise(ctx, p, lr, e.watchDisk(p, disk, lr))
		p.usage.end()
		e.linkLost(p.sb, waitErr)
		r.at.finish() // the terminal's last output, before the record
		rec.Refusals = r.refusals.result()
		r.releaseNet()
		rec.DurationMs = time.Since(start).Milliseconds()
		e.complete(&rec, lr, status, waitErr, r.stdout, r.stderr)
		if rec.LogFile != "" {
			// What stays of the log once the workspace is gone (a
			// one-shot's, at once), read while the run still names it.
			rec.Stdout, rec.LogSize = e.logTail(&rec)
		}
		// Trace events go after the record, so pruning finds them. The
		// record is queued before the run leaves the live ones: a reader
		// that no longer finds the run going finds its end recorded.
		e.records.save(rec, r.tr.finish)
		r.output.close()
		e.live.remove(lr)
		return &RunResult{Record: rec, Stdout: r.stdout.String(), Stderr: r.stderr.String()}
	}
	if !p.req.Background {
		defer release()
		return finish()
	}
	rec.State = "running"
	e.records.save(rec, nil)
	started := rec
	if p.launch != nil {
		p.launch.started(lr, rec)
	}
	go func() {
		defer release()
		res := finish()
		// A backend may copy output into the log after Start returned
		// (bwrap does for stderr): the file is closed once the run is over.
		if r.logFile != nil {
			r.logFile.Close()
		}
		if p.sb.Kind == "oneshot" {
			_, _ = e.purgeWorkspace(p.sb)
		}
		if p.launch != nil {
			p.launch.ended(res.Record)
		}
	}()
	return &RunResult{Record: started}
}

// supervise waits for the run, killing it on timeout, on the caller's
// cancellation (foreground runs only) and, with the watchdog, when the
// workspace outgrows its quota.
func (e *Engine) supervise(ctx context.Context, p *plan, lr *liveRun, quota quotaWatch) (backends.ExitStatus, error) {
	waited := make(chan struct{})
	var status backends.ExitStatus
	var err error
	go func() {
		status, err = lr.proc.Wait()
		close(waited)
	}()
	var timeout <-chan time.Time
	if p.launch == nil && p.timeout > 0 {
		// A supervised server (Launch) runs until it is stopped.
		timer := time.NewTimer(p.timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	var idle <-chan string
	if p.idle > 0 {
		w := e.watchIdle(lr, p.idle)
		defer w.stop()
		idle = w.fired
	}
	done := ctx.Done()
	if p.req.Background {
		done = nil // a background run outlives the request that started it
	}
	var overQuota <-chan struct{}
	if quota != nil {
		defer quota.Stop()
		overQuota = quota.Exceeded()
	}
	for {
		select {
		case <-waited:
			return status, err
		case <-timeout:
			lr.kill("timeout")
		case why := <-idle:
			lr.kill(why)
			idle = nil
		case <-done:
			lr.kill("cancelled by the caller")
			done = nil
		case <-overQuota:
			lr.kill("disk quota: " + quota.Reason())
			overQuota = nil
		}
	}
}

// quotaWatch is a disk watchdog's watch of a run's workspace: the
// engine's own (diskquota.Watch) or, for a workspace elsewhere, the count
// through the container (remoteWatch).
type quotaWatch interface {
	Exceeded() <-chan struct{}
	Reason() string
	Stop()
}

// complete fills the record from the process's end.
func (e *Engine) complete(rec *RunRecord, lr *liveRun, status backends.ExitStatus, waitErr error, stdout, stderr *cappedBuffer) {
	reason := lr.killReason()
	switch {
	case reason == "timeout":
		rec.TimedOut = true
	case reason != "":
		rec.Killed = reason
	case waitErr != nil:
		rec.Error = waitErr.Error()
	}
	if reason == "" && waitErr == nil {
		code := status.Code
		rec.ExitCode = &code
		if status.Signal != "" {
			rec.Killed = "killed by signal " + status.Signal
		}
	}
	rec.Truncated = stdout.Truncated() || stderr.Truncated()
	rec.Stdout = lastBytes(stdout.String(), recordTail)
	rec.Stderr = lastBytes(stderr.String(), recordTail)
	rec.State = "done"
}

// refuse records a run that did not start and returns the refusal.
func (e *Engine) refuse(rec *RunRecord, err error) (*RunResult, error) {
	var r *RefusedError
	if !errors.As(err, &r) {
		err = &RefusedError{Reason: err.Error()}
		errors.As(err, &r)
	}
	rec.Isolation = "refused: " + r.Reason
	if r.Isolation != "" {
		rec.Isolation = "refused: " + r.Isolation
	}
	rec.Error = r.Reason
	rec.State = "done"
	e.records.save(*rec, nil)
	e.log.Warn("A run was refused.", "run", rec.ID, "sandbox", rec.SandboxID, "reason", r.Reason)
	return &RunResult{Record: *rec}, err
}

func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// openRunLog creates the log file of a background run in the workspace.
func (e *Engine) openRunLog(sb *Sandbox, runID string) (*os.File, error) {
	f, err := e.createInWorkspace(sb, ".runs", runID+".log")
	if err != nil {
		return nil, fmt.Errorf("creating the run's log file: %w", err)
	}
	return f, nil
}
