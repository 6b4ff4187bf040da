package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
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
	// a log file in the workspace.
	Background bool `json:"background,omitempty"`
	// Stdout and Stderr, when set, also receive the output as it comes
	// (the CLI streams it).
	Stdout io.Writer `json:"-"`
	Stderr io.Writer `json:"-"`
	// Trace traces this run even when its sandbox does not (trace.go).
	Trace bool `json:"trace,omitempty"`
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
	timeout time.Duration
	// codeFile is written into the workspace before the run.
	codeFile, code string
}

// Exec runs req in the persistent sandbox id.
func (e *Engine) Exec(ctx context.Context, id string, req RunRequest) (*RunResult, error) {
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
	sb, err := e.newSandbox(cfg)
	if err != nil {
		return nil, err
	}
	sb.Kind = "oneshot"
	if cfg.Name == nil {
		sb.Name = "one-shot"
	}
	p, err := e.planFor(&sb, req)
	if err != nil {
		return nil, err
	}
	if err := e.makeWorkspace(&sb); err != nil {
		return nil, err
	}
	p.kind = "oneshot"
	res, err := e.run(ctx, p)
	if res == nil || res.Record.State != "running" {
		_, _ = e.purgeWorkspace(&sb)
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
	if err := checkEnv("env", req.Env); err != nil {
		return nil, err
	}
	timeout := sb.TimeoutMs
	if req.TimeoutMs != 0 {
		if err := checkTimeout("timeoutMs", req.TimeoutMs); err != nil {
			return nil, err
		}
		timeout = req.TimeoutMs
	}
	p.timeout = time.Duration(timeout) * time.Millisecond
	return p, nil
}

// run is the single gate: every execution passes here. It applies the
// policy, picks the backend (never a weaker one than asked), starts the
// process, enforces the timeout and the disk quota, and records what
// isolation the run really got, refusals included.
func (e *Engine) run(ctx context.Context, p *plan) (*RunResult, error) {
	rec := RunRecord{
		ID:          e.newRunID(),
		SandboxID:   p.sb.ID,
		SandboxName: p.sb.Name,
		Source:      p.req.Source,
		Kind:        p.kind,
		Command:     truncateRunes(p.display, 2000),
		Language:    p.req.Language,
		Network:     p.sb.Network || !p.sb.Ports.Empty(),
		Background:  p.req.Background,
		StartedAt:   e.now().UTC(),
		State:       "done",
	}
	if rec.Source == "" {
		rec.Source = SourceCLI
	}
	release, err := e.takeRunSlot(p.sb.ID)
	if err != nil {
		return e.refuse(&rec, err)
	}
	// A background run gives its slot back when it ends, in its own
	// goroutine; every other way out of here gives it back now.
	background := false
	defer func() {
		if !background {
			release()
		}
	}()
	backend, isolation, err := e.choose(ctx, p)
	if err != nil {
		return e.refuse(&rec, err)
	}
	rec.Backend, rec.Isolation = backend.Name(), isolation

	disk := e.prepareDisk(p.sb, backend)
	spec, err := e.spec(p, &rec)
	if err != nil {
		return e.refuse(&rec, err)
	}
	tr := e.traceRun(p, &rec, backend, spec) // trace (issue #7)
	releaseNet, err := e.plumbNetwork(p, backend, spec)
	if err != nil {
		tr.discard()
		return e.refuse(&rec, err)
	}
	stdout := newCappedBuffer(OutputCap, p.req.Stdout)
	stderr := newCappedBuffer(OutputCap, p.req.Stderr)
	var logFile *os.File
	if p.req.Background {
		if logFile, err = e.openRunLog(p.sb, rec.ID); err != nil {
			releaseNet()
			return e.refuse(&rec, err)
		}
		spec.Stdout, spec.Stderr = logFile, logFile
		rec.LogFile = logFile.Name()
	} else {
		spec.Stdout, spec.Stderr = stdout, stderr
	}
	start := time.Now()
	proc, err := backend.Start(ctx, spec)
	if err != nil {
		if logFile != nil {
			logFile.Close()
		}
		releaseNet()
		tr.discard() // trace (issue #7)
		return e.refuse(&rec, fmt.Errorf("%s could not start the sandbox: %w", backend.Name(), err))
	}
	enf := proc.Enforcement()
	tr.started(enf) // trace (issue #7)
	rec.Enforced, rec.Missing = enf.Limits, enf.Missing
	disk = e.startedDisk(p, backend, disk)
	if line := disk.line(p.sb); line != "" {
		rec.Enforced = append(rec.Enforced, line)
	}
	if backend.Name() == "direct" && wantsNetwork(p.sb) {
		rec.Missing = append(rec.Missing, "network: the direct backend enforces nothing; the network switch, port and domain rules are advisory only")
	}
	if isolation != "none" && isolation != "none (degraded)" && enf.Isolation != "" {
		rec.Isolation = enf.Isolation
	}
	lr := &liveRun{id: rec.ID, sandboxID: p.sb.ID, command: rec.Command, started: start, proc: proc, done: make(chan struct{})}
	e.live.add(lr)
	if p.sb.Kind != "oneshot" {
		e.records.touch(p.sb.ID, e.now().UTC())
	}
	finish := func() *RunResult {
		status, waitErr := e.supervise(ctx, p, lr, e.watchDisk(p, disk, lr))
		releaseNet()
		e.live.remove(lr)
		rec.DurationMs = time.Since(start).Milliseconds()
		e.complete(&rec, lr, status, waitErr, stdout, stderr)
		// trace (issue #7): events after the record, so pruning finds them
		e.records.save(rec, tr.finish)
		return &RunResult{Record: rec, Stdout: stdout.String(), Stderr: stderr.String()}
	}
	if !p.req.Background {
		return finish(), nil
	}
	rec.State = "running"
	e.records.save(rec, nil)
	started := rec
	background = true
	go func() {
		defer release()
		finish()
		// A backend may copy output into the log after Start returned
		// (bwrap does for stderr): the file is closed once the run is over.
		logFile.Close()
		if p.sb.Kind == "oneshot" {
			_, _ = e.purgeWorkspace(p.sb)
		}
	}()
	return &RunResult{Record: started}, nil
}

// supervise waits for the run, killing it on timeout, on the caller's
// cancellation (foreground runs only) and, with the watchdog, when the
// workspace outgrows its quota.
func (e *Engine) supervise(ctx context.Context, p *plan, lr *liveRun, quota *diskquota.Watch) (backends.ExitStatus, error) {
	waited := make(chan struct{})
	var status backends.ExitStatus
	var err error
	go func() {
		status, err = lr.proc.Wait()
		close(waited)
	}()
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
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
		case <-timer.C:
			lr.kill("timeout")
		case <-done:
			lr.kill("cancelled by the caller")
			done = nil
		case <-overQuota:
			lr.kill("disk quota: " + quota.Reason())
			overQuota = nil
		}
	}
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
