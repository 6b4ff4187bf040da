package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/app/tracehooks"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd/remotefs"
	"github.com/senclaw/sandbox/backends/tracer"
)

// Limits of Events.
const (
	DefaultEventsLimit = 200
	MaxEventsLimit     = 5000
)

// traceCaveat ends every note about tracing.
const traceCaveat = "Tracing is for review, not security evidence: it shows what the code touched, not everything it could have done."

// EventQuery selects trace events. RunID, SandboxID and KindPrefix narrow
// the selection when given; Limit is 1-5000 (0: 200).
type EventQuery struct {
	SandboxID  string `json:"sandboxId,omitempty"`
	RunID      string `json:"runId,omitempty"`
	KindPrefix string `json:"kind,omitempty"`
	Limit      int    `json:"limit,omitempty"`
}

// StoredEvent is a trace event with the run it belongs to.
type StoredEvent struct {
	RunID string `json:"runId"`
	backends.TraceEvent
}

// EventsResult is the answer of Events, newest event first.
type EventsResult struct {
	// TraceEnabled says whether the sandbox asked about traces its runs.
	TraceEnabled bool          `json:"traceEnabled"`
	Events       []StoredEvent `json:"events"`
	// Note explains an empty answer: whether tracing is on, what to do.
	Note string `json:"note,omitempty"`
}

// SetTrace switches tracing of the sandbox's later runs on or off. The
// note says how its runs are traced, and that tracing is for review.
func (e *Engine) SetTrace(id string, enabled bool) (note string, err error) {
	sb, err := e.saveTraceFlags(id, func(sb *Sandbox) { sb.TraceEnabled = enabled })
	if err != nil {
		return "", err
	}
	if !enabled {
		return "Tracing is off for sandbox " + sb.Name + "; events of earlier runs are kept until their runs are pruned or ClearEvents.", nil
	}
	return fmt.Sprintf("Tracing is on for later runs of sandbox %s: %s. %s", sb.Name, e.traceHow(sb), traceCaveat), nil
}

// SetTraceAll switches full detail for the sandbox's traces: with all,
// reads of the system roots are listed one by one instead of being folded
// into one summary event per root.
func (e *Engine) SetTraceAll(id string, all bool) error {
	_, err := e.saveTraceFlags(id, func(sb *Sandbox) { sb.TraceAll = all })
	return err
}

func (e *Engine) saveTraceFlags(id string, set func(*Sandbox)) (*Sandbox, error) {
	var sb Sandbox
	if err := e.store.GetSandbox(id, &sb); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, &NotFoundError{Kind: "sandbox", ID: id}
		}
		return nil, err
	}
	set(&sb)
	sb.UpdatedAt = e.now().UTC()
	if err := e.store.PutSandbox(id, sb); err != nil {
		return nil, fmt.Errorf("saving sandbox: %w", err)
	}
	return &sb, nil
}

// traceHow says in words how sb's runs are traced.
func (e *Engine) traceHow(sb *Sandbox) string {
	const diff = "; a before/after diff of the workspace is added"
	if remoteSandbox(sb) {
		return "engine " + sb.Engine + " is on another machine, and no tracer runs there from outside across the link, so in-container hooks (Python audit hooks, a Node preload) record Python and Node activity, labelled as theirs, and the traced code can tamper with them" + diff
	}
	name := sb.Backend
	if name == "" && len(e.opts.Backends) > 0 {
		name = e.opts.Backends[0].Name()
	}
	if b := e.probes.find(name); b != nil {
		if o, ok := b.(tracer.Outside); ok {
			ok, how := o.TracesFromOutside()
			if ok {
				return name + ": " + how + diff
			}
			return name + " cannot trace from outside here (" + how + "), so in-sandbox hooks (Python audit hooks, a Node preload) record Python and Node activity, and the traced code can tamper with them" + diff
		}
	}
	return name + " cannot trace from outside, so in-sandbox hooks (Python audit hooks, a Node preload) record Python and Node activity, and the traced code can tamper with them" + diff
}

// Events returns trace events, newest first.
func (e *Engine) Events(q EventQuery) (EventsResult, error) {
	e.records.flush() // a run just finished: its events follow its record
	res := EventsResult{Events: []StoredEvent{}}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultEventsLimit
	case q.Limit < 1 || q.Limit > MaxEventsLimit:
		return res, badField("limit", q.Limit, "must be between 1 and %d", MaxEventsLimit)
	}
	if q.KindPrefix != "" && !slices.ContainsFunc(tracer.Kinds, func(k string) bool { return strings.HasPrefix(k, q.KindPrefix) }) {
		return res, badField("kind", q.KindPrefix, "matches no kind of event; the kinds are %s (a prefix such as file, proc or net works)", strings.Join(tracer.Kinds, ", "))
	}
	keep := func(runID string, data []byte) bool {
		var ev StoredEvent
		if json.Unmarshal(data, &ev) != nil || !strings.HasPrefix(ev.Kind, q.KindPrefix) {
			return true
		}
		ev.RunID = runID
		res.Events = append(res.Events, ev)
		return len(res.Events) < q.Limit
	}
	sandboxID := q.SandboxID
	var err error
	if q.RunID != "" {
		run, rerr := e.Run(q.RunID)
		if rerr != nil {
			return res, rerr
		}
		if sandboxID != "" && run.SandboxID != sandboxID {
			return res, badField("runId", q.RunID, "is a run of another sandbox")
		}
		sandboxID = run.SandboxID
		err = e.store.ListEvents(q.RunID, func(d []byte) bool { return keep(q.RunID, d) })
	} else {
		err = e.store.ListAllEvents(sandboxID, keep)
	}
	if err != nil {
		return res, err
	}
	if sandboxID != "" {
		sb, gerr := e.Get(sandboxID)
		var nf *NotFoundError
		switch {
		case errors.As(gerr, &nf) && q.RunID == "" && len(res.Events) == 0:
			return res, gerr
		case gerr == nil:
			res.TraceEnabled = sb.TraceEnabled
		}
	}
	if len(res.Events) == 0 {
		res.Note = e.emptyEventsNote(q, res.TraceEnabled)
	}
	return res, nil
}

func (e *Engine) emptyEventsNote(q EventQuery, enabled bool) string {
	switch {
	case q.RunID != "":
		return "Run " + q.RunID + " has no trace events" + kindPart(q) + ": it was not traced, or its events were cleared. Switch tracing on for its sandbox (senclaw trace on SANDBOX) or run with --trace; later runs are traced."
	case q.SandboxID != "" && enabled:
		return "Tracing is on for this sandbox, but no traced run has finished yet" + kindPart(q) + "; runs started after tracing was switched on are traced."
	case q.SandboxID != "":
		return "Tracing is off for this sandbox: switch it on (senclaw trace on SANDBOX, POST /sandboxes/{id}/trace) and its later runs are traced."
	}
	return "No trace events yet" + kindPart(q) + ": switch tracing on for a sandbox (senclaw trace on SANDBOX) or run with --trace."
}

func kindPart(q EventQuery) string {
	if q.KindPrefix == "" {
		return ""
	}
	return " of kind " + q.KindPrefix
}

// ClearEvents deletes the trace events of every run of the sandbox and
// returns how many were deleted.
func (e *Engine) ClearEvents(sandboxID string) (int, error) {
	n, err := e.store.ClearEvents(sandboxID)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		if _, gerr := e.Get(sandboxID); gerr != nil {
			return 0, gerr
		}
	}
	return n, nil
}

// storeEvents saves a run's events.
func (e *Engine) storeEvents(runID string, evs []backends.TraceEvent) {
	data := make([][]byte, 0, len(evs))
	for _, ev := range evs {
		b, err := json.Marshal(StoredEvent{RunID: runID, TraceEvent: ev})
		if err == nil {
			data = append(data, b)
		}
	}
	if err := e.store.PutEvents(runID, data); err != nil {
		e.log.Error("The run's trace events could not be saved.", "run", runID, "err", err)
	}
}

// runTrace records one traced run: the outside tracer's events (through
// Spec.Trace), the in-sandbox hooks' when the backend cannot trace from
// outside, and a before/after diff of the workspace. A nil *runTrace is an
// untraced run; its methods do nothing.
type runTrace struct {
	e              *Engine
	ws, runID      string
	col            *tracer.Collector
	before         *tracer.Snapshot
	outside, hooks bool
	// remote is the sandbox on another machine whose workspace the
	// trace reads through its engine (no outside tracer across the link).
	remote *Sandbox
}

// diffSkip are the engine's own workspace dirs, left out of the diff.
var diffSkip = []string{tracehooks.Dir, ".runs"}

// traceRun starts recording p's run when its sandbox or the request asks
// for a trace. It must run after the spec is complete (the code file is
// written) and before the backend starts.
func (e *Engine) traceRun(p *plan, rec *RunRecord, b backends.Backend, spec *backends.Spec) *runTrace {
	if !p.sb.TraceEnabled && !p.req.Trace {
		return nil
	}
	t := &runTrace{e: e, ws: spec.Workspace, runID: rec.ID}
	t.col = tracer.NewCollector(tracer.MaxEventsPerRun, p.sb.TraceAll, filepath.Join(spec.Workspace, tracehooks.Dir))
	spec.Trace = t.col.Add
	if remoteSandbox(p.sb) {
		e.traceRemote(t, p.sb, spec)
		return t
	}
	if o, ok := b.(tracer.Outside); ok {
		t.outside, _ = o.TracesFromOutside()
	}
	if !t.outside {
		vars, err := tracehooks.Install(spec.Workspace, rec.ID, spec.User, spec.Env)
		if err != nil {
			t.mark("the in-sandbox hooks could not be installed: " + err.Error())
		} else {
			t.hooks = true
			for k, v := range vars {
				spec.Env = append(spec.Env, k+"="+v)
			}
			slices.Sort(spec.Env)
		}
	}
	t.before = tracer.TakeSnapshot(spec.Workspace, diffSkip, tracer.MaxDiffEntries)
	return t
}

// mark records a part of the run the trace cannot show.
func (t *runTrace) mark(why string) {
	t.col.Add(backends.TraceEvent{TimeMs: t.e.now().UnixMilli(), Kind: tracer.KindIncomplete, Target: "trace", Detail: why, Source: tracer.SourceEngine})
}

// started checks what the backend really did.
func (t *runTrace) started(enf backends.Enforcement) {
	if t != nil && t.outside && slices.Contains(enf.Missing, tracer.NoOutsideTracer) {
		t.mark("the backend could not trace this run from outside; only the workspace diff is recorded")
	}
}

// traceRemote sets t up for a run of sb on another machine's engine:
// the hooks go in with the run and their file is read back through the
// engine, and the diff walks the workspace in the container.
func (e *Engine) traceRemote(t *runTrace, sb *Sandbox, spec *backends.Spec) {
	t.remote, t.hooks = sb, true
	spec.Files = append(spec.Files, tracehooks.Files()...)
	for k, v := range tracehooks.Vars(spec.Workspace, t.runID, spec.Env) {
		spec.Env = append(spec.Env, k+"="+v)
	}
	slices.Sort(spec.Env)
	if sb.Kind == "oneshot" {
		t.mark("a one-shot run on engine " + sb.Engine + " is removed with its container: its in-container trace and the workspace diff are not recorded")
		t.hooks = false
		return
	}
	t.before = e.remoteSnapshot(sb)
}

// remoteSnapshot walks sb's workspace in its container.
func (e *Engine) remoteSnapshot(sb *Sandbox) *tracer.Snapshot {
	var entries []remotefs.WalkEntry
	var truncated bool
	err := e.remoteFiles(sb, func(ctx context.Context, c *remotefs.Client) (err error) {
		entries, truncated, err = c.Walk(ctx, ".", tracer.MaxDiffEntries, diffSkip)
		return err
	})
	if err != nil {
		return nil
	}
	snap := make([]tracer.SnapshotEntry, len(entries))
	for i, en := range entries {
		snap[i] = tracer.SnapshotEntry{Path: en.Path, Size: en.Size, MTime: time.Unix(0, en.ModNs), Dir: en.Dir}
	}
	return tracer.SnapshotOf(remoteWorkspace, snap, truncated)
}

// finishRemote collects what a run on another machine's engine left.
func (t *runTrace) finishRemote() {
	sb := t.remote
	if t.hooks {
		data, err := t.e.readRemoteAll(sb, tracehooks.TraceFile(t.runID), tracehooks.MaxTraceBytes)
		if err != nil {
			t.mark("the in-container trace file could not be read: " + err.Error())
		} else if _, err := tracehooks.Parse(bytes.NewReader(data), tracer.SourceContainerHooks, t.col.Add); err != nil {
			t.mark("the in-container trace file could not be read: " + err.Error())
		}
		_ = t.e.remoteFiles(sb, func(ctx context.Context, c *remotefs.Client) error {
			return c.Remove(ctx, tracehooks.TraceFile(t.runID))
		})
	}
	if t.before != nil {
		if after := t.e.remoteSnapshot(sb); after != nil {
			for _, ev := range tracer.Diff(t.before, after, t.e.now().UnixMilli()) {
				t.col.Add(ev)
			}
		} else {
			t.mark("the workspace on engine " + sb.Engine + " could not be walked after the run: no diff")
		}
	}
	t.e.storeEvents(t.runID, t.col.Events())
}

// discard cleans up after a run that did not start.
func (t *runTrace) discard() {
	if t != nil && t.hooks && t.remote == nil {
		tracehooks.Discard(t.ws, t.runID)
	}
}

// finish collects the hooks' events and the diff, and stores the run's
// events. It runs after the run's processes are gone.
func (t *runTrace) finish() {
	if t == nil {
		return
	}
	if t.remote != nil {
		t.finishRemote()
		return
	}
	if t.hooks {
		if _, err := tracehooks.Collect(t.ws, t.runID, t.col.Add); err != nil {
			t.mark("the in-sandbox trace file could not be read: " + err.Error())
		}
	}
	after := tracer.TakeSnapshot(t.ws, diffSkip, tracer.MaxDiffEntries)
	for _, ev := range tracer.Diff(t.before, after, t.e.now().UnixMilli()) {
		t.col.Add(ev)
	}
	t.e.storeEvents(t.runID, t.col.Events())
}
