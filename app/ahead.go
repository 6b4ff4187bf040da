package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/diskquota"
)

// One-shot sandboxes made ahead: most of a bwrap one-shot's
// time is bwrap setting the sandbox up (namespaces, mounts, the barrier,
// the limits), which needs nothing of the command. The engine keeps
// Options.AheadOneShots one-shot sandboxes of the default configuration
// set up whole, each waiting for its command (backends.AheadStarter), and
// a plain one-shot run (the default sandbox, a command or argv, nothing
// that changes the sandbox) takes one and hands it its command, after
// the same checks and the same record as any run (runAhead). Each serves
// one run and is removed after it, as any one-shot's is; a new one is made
// when a run ends. A change of settings or policy gives those made ahead up.
//
// What the run gets is what run() would have given it: the sandbox is
// made by the same code (prepare, from the same default sandbox and
// plan), and a request whose sandbox would differ in anything but its
// name and timeout is not given one. The sandbox holds the forwarder
// (senclaw-netfwd) in the command's place until then, under the run's
// barrier and limits; TestASandboxMadeAheadIsTheSandboxStartMakes holds
// the bwrap side to Start's.
//
// Crashes: each is on disk (the store's ahead bucket) before
// anything of it exists, so the next start removes what an engine that
// died left of it (reapAhead). A run that took one is recorded as running
// before it is handed its command, with the id the sandbox was made under
// (RunRecord.AheadID), which its cgroups carry; from then on the record
// answers for it as for any one-shot. That commit also drops the
// sandbox's entry and puts the entry of the one that replaces it
// (reserved), so the sandboxes made ahead cost no commit of their own as
// runs go.

// aheadSandbox is a one-shot sandbox made ahead.
type aheadSandbox struct {
	gen  uint64
	sb   Sandbox
	id   string // what its cgroups are named after (RunRecord.AheadID)
	r    *prepared
	proc backends.AheadProcess
}

// aheadEntry is what the store keeps of one (store.PutAhead).
type aheadEntry struct {
	RunID string    `json:"runId"`
	Made  time.Time `json:"made"`
	// UID is the sandbox's own uid under a root engine (Sandbox.UID).
	UID uint32 `json:"uid,omitempty"`
	// Sandbox, set for a persistent sandbox's ready start (ready.go),
	// is that sandbox's id: the entry's own id names no sandbox, and
	// nothing of the sandbox but the start's run goes with it.
	Sandbox string `json:"sandbox,omitempty"`
}

// aheadIdent names a sandbox to be made ahead: its id, the id its
// cgroups are to carry and, under a root engine, its uid (taken with
// the name, so that the store's entry keeps it).
type aheadIdent struct {
	sandbox, run string
	uid          uint32
}

// newAheadIdent names the next sandbox made ahead; ok is false when a
// root engine has no uid to give it (the sandbox is then not made).
func (e *Engine) newAheadIdent() (aheadIdent, bool) {
	id := aheadIdent{sandbox: randomHex(6), run: e.newRunID()}
	sb := Sandbox{ID: id.sandbox}
	if err := e.takeUID(&sb); err != nil {
		return id, false
	}
	id.uid = sb.UID
	return id, true
}

// release gives back the uid of a sandbox that is not to be made.
func (id aheadIdent) release(e *Engine) {
	e.releaseUID(&Sandbox{ID: id.sandbox, UID: id.uid})
}

// edit is the store's entry for it.
func (id aheadIdent) edit(e *Engine) store.AheadEdit {
	return store.AheadEdit{ID: id.sandbox, Value: aheadEntry{RunID: id.run, Made: e.now().UTC(), UID: id.uid}}
}

// aheadState is the engine's one-shot sandboxes made ahead: those ready
// (made, waiting for a run), those being made and those reserved.
type aheadState struct {
	mu     sync.Mutex
	want   int
	ready  []*aheadSandbox
	making int
	// reserved are on disk already, to be made next.
	reserved []aheadIdent
	gen      uint64 // bumped when settings or policy change
	closed   bool
	// failed is when making one last failed; none is tried again for
	// aheadRetry after it.
	failed time.Time
	why    string
	wg     sync.WaitGroup
}

// aheadRetry is how long the engine waits after a failure to make a
// sandbox ahead before it tries again (the runs meanwhile start as usual).
const aheadRetry = 30 * time.Second

// aheadTimeout bounds the making of one.
const aheadTimeout = 30 * time.Second

// fillAhead starts making sandboxes until there are as many as wanted.
func (e *Engine) fillAhead() {
	a := &e.ahead
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.want <= 0 || (!a.failed.IsZero() && time.Since(a.failed) < aheadRetry) {
		return
	}
	for len(a.ready)+a.making < a.want {
		a.making++
		a.wg.Add(1)
		var ident *aheadIdent
		if n := len(a.reserved); n > 0 {
			id := a.reserved[n-1] // a copy: the slot is reused by the next reserve
			ident = &id
			a.reserved = a.reserved[:n-1]
		}
		go func(gen uint64) {
			defer a.wg.Done()
			ro, err := e.makeAhead(gen, ident)
			a.mu.Lock()
			a.making--
			switch {
			case err != nil:
				if a.why != err.Error() {
					e.log.Info("A one-shot sandbox could not be made ahead; one-shot runs start as usual.", "reason", err)
				}
				a.failed, a.why = time.Now(), err.Error()
			case a.closed || gen != a.gen || len(a.ready) >= a.want:
				// Stale, or one taken for a run that did not start was
				// put back while this one was made: never more than wanted.
				defer e.giveUpAhead(ro)
			default:
				a.failed, a.why = time.Time{}, ""
				a.ready = append(a.ready, ro)
				ro = nil
			}
			a.mu.Unlock()
		}(a.gen)
	}
}

// makeAhead makes one one-shot sandbox of the default configuration,
// set up whole and waiting for its command: ident's when it is reserved,
// else one recorded now.
func (e *Engine) makeAhead(gen uint64, ident *aheadIdent) (*aheadSandbox, error) {
	sb, err := e.newSandbox(SandboxConfig{})
	if err != nil {
		if ident != nil {
			ident.release(e)
		}
		return nil, err
	}
	sb.Kind, sb.Name = "oneshot", "one-shot"
	if ident == nil {
		id, ok := e.newAheadIdent()
		if !ok {
			return nil, errors.New("no sandbox uid is free to make a sandbox ahead with")
		}
		ed := id.edit(e)
		if err := e.store.PutAhead(ed.ID, ed.Value); err != nil {
			id.release(e)
			return nil, fmt.Errorf("recording a sandbox made ahead: %w", err)
		}
		ident = &id
	}
	sb.ID = ident.sandbox
	sb.UID, sb.GID = ident.uid, ident.uid
	ro := &aheadSandbox{gen: gen, sb: sb, id: ident.run}
	// What fails from here gives its entry up with it.
	fail := func(err error) (*aheadSandbox, error) {
		e.giveUpAhead(ro)
		return nil, err
	}
	p, err := e.planFor(&ro.sb, RunRequest{Argv: []string{"true"}})
	if err != nil {
		return fail(err)
	}
	p.kind, p.newWorkspace = "oneshot", true
	ctx, cancel := context.WithTimeout(context.Background(), aheadTimeout)
	defer cancel()
	backend, isolation, err := e.choose(ctx, p)
	if err != nil {
		return fail(err)
	}
	pre, ok := backend.(backends.AheadStarter)
	if !ok {
		return fail(fmt.Errorf("the %s backend, which one-shot runs get here, starts no sandbox ahead of its command", backend.Name()))
	}
	if err := e.makeWorkspace(&ro.sb); err != nil {
		return fail(err)
	}
	rec := RunRecord{ID: ro.id, SandboxID: sb.ID, Backend: backend.Name(), Isolation: isolation}
	r, err := e.prepare(p, &rec, backend, isolation)
	if err != nil {
		return fail(err)
	}
	ro.r = r
	if r.spec.Helper == "" {
		r.spec.Helper = e.opts.Forwarder
	}
	r.spec.Argv = nil
	proc, err := pre.StartAhead(ctx, r.spec)
	if err != nil {
		return fail(err)
	}
	ro.proc = proc
	return ro, nil
}

// giveUpAhead removes a sandbox made ahead that no run takes, or what
// there is of one that could not be made.
func (e *Engine) giveUpAhead(ro *aheadSandbox) {
	if ro.proc != nil {
		_ = ro.proc.Kill()
		_, _ = ro.proc.Wait()
	}
	if ro.r != nil {
		ro.r.abandon()
	}
	e.forgetAhead(&ro.sb)
}

// forgetAhead removes a made-ahead sandbox's workspace, then its entry
// in the store.
func (e *Engine) forgetAhead(sb *Sandbox) {
	if sb.OwnWorkspace {
		if _, err := e.purgeWorkspace(sb); err != nil {
			e.log.Warn("The workspace of a sandbox made ahead could not be removed.", "sandbox", sb.ID, "err", err)
			return // the next start tries again
		}
	}
	if err := e.store.DeleteAhead(sb.ID); err != nil {
		e.log.Warn("A sandbox made ahead could not be forgotten.", "sandbox", sb.ID, "err", err)
	}
	e.releaseUID(sb) // nothing of it is left
}

// takeAhead takes a ready sandbox of the current settings, if there is one.
func (e *Engine) takeAhead() *aheadSandbox {
	a := &e.ahead
	a.mu.Lock()
	defer a.mu.Unlock()
	for n := len(a.ready); n > 0; n = len(a.ready) {
		ro := a.ready[n-1]
		a.ready = a.ready[:n-1]
		if a.fresh(ro) {
			return ro
		}
		go e.giveUpAhead(ro) // of old settings, or it died while it waited
	}
	return nil
}

// aheadFresh reports whether ro, taken for a run, is still what a run
// would get if it were made now: made under the settings and the policy
// in force (none changed while the run waited for its place), and still
// waiting for its command (it did not die meanwhile).
func (e *Engine) aheadFresh(ro *aheadSandbox) bool {
	a := &e.ahead
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fresh(ro)
}

// fresh is aheadFresh, with a.mu held.
func (a *aheadState) fresh(ro *aheadSandbox) bool {
	return ro.gen == a.gen && ro.proc.Waiting()
}

// reserveAhead keeps a sandbox recorded ahead of its making.
func (e *Engine) reserveAhead(id aheadIdent) {
	a := &e.ahead
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || len(a.reserved) >= a.want {
		// More than are wanted (runs that raced the refill).
		go func() {
			_ = e.store.DeleteAhead(id.sandbox)
			id.release(e)
		}()
		return
	}
	a.reserved = append(a.reserved, id)
}

// putBackAhead returns a sandbox taken for a run that did not start.
func (e *Engine) putBackAhead(ro *aheadSandbox) {
	a := &e.ahead
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || ro.gen != a.gen || len(a.ready) >= a.want {
		go e.giveUpAhead(ro)
		return
	}
	a.ready = append(a.ready, ro)
}

// aheadChanged gives up the ready sandboxes after a change of settings
// or policy, and makes new ones.
func (e *Engine) aheadChanged() {
	a := &e.ahead
	a.mu.Lock()
	a.gen++
	stale := a.ready
	a.ready = nil
	a.failed, a.why = time.Time{}, ""
	a.mu.Unlock()
	for _, ro := range stale {
		go e.giveUpAhead(ro)
	}
	e.readyChanged("") // the persistent sandboxes' ready starts too
	e.fillAhead()
}

// closeAhead gives up every ready sandbox and waits for those being made.
func (e *Engine) closeAhead() {
	a := &e.ahead
	a.mu.Lock()
	a.closed = true
	stale, reserved := a.ready, a.reserved
	a.ready, a.reserved = nil, nil
	a.mu.Unlock()
	for _, id := range reserved {
		_ = e.store.DeleteAhead(id.sandbox)
		id.release(e)
	}
	for _, ro := range stale {
		e.giveUpAhead(ro)
	}
	// One being made is given up as it is done (fillAhead); the engine
	// waits for that a while, not for ever.
	made := make(chan struct{})
	go func() { a.wg.Wait(); close(made) }()
	select {
	case <-made:
	case <-time.After(closeAheadWait):
		e.log.Warn("A sandbox being made ahead did not finish before the engine closed; the next start removes it.")
	}
}

// closeAheadWait bounds how long Close waits for a sandbox being made.
const closeAheadWait = 5 * time.Second

// aheadSandboxes lists the ids of the sandboxes made ahead that are still
// there (Leftovers counts them as live).
func (e *Engine) aheadSandboxes() map[string]bool {
	ids := map[string]bool{}
	_ = e.store.EachAhead(func(id string, _ []byte) error {
		ids[id] = true
		return nil
	})
	return ids
}

// reapAhead runs at engine start: it removes what an earlier engine left
// of the sandboxes it made ahead (their processes died with it).
func (e *Engine) reapAhead() {
	runs := map[string]string{}  // made-ahead id -> sandbox id
	ready := map[string]string{} // a ready start's run id -> sandbox id
	var readyKeys []string
	var unreadable []string
	_ = e.store.EachAhead(func(id string, data []byte) error {
		var ent aheadEntry
		read := json.Unmarshal(data, &ent) == nil && ent.RunID != ""
		switch {
		case read && ent.Sandbox != "":
			ready[ent.RunID] = ent.Sandbox
			readyKeys = append(readyKeys, id)
		case read:
			runs[ent.RunID] = id
		default:
			unreadable = append(unreadable, id)
		}
		return nil
	})
	if len(ready) > 0 {
		// A persistent sandbox's ready start: its run is reaped, the
		// sandbox and its workspace stay.
		e.reapRuns(ready)
		for _, id := range readyKeys {
			_ = e.store.DeleteAhead(id)
		}
		e.log.Info("Ready starts of persistent sandboxes an earlier engine left were removed.", "count", len(ready))
	}
	if len(runs)+len(unreadable) == 0 {
		return
	}
	e.reapRuns(runs)
	for _, id := range runs {
		e.forgetLeftAhead(id)
	}
	for _, id := range unreadable {
		e.forgetLeftAhead(id) // its cgroups, if any, go with the sweep of empty ones
	}
	e.log.Info("Sandboxes an earlier engine made ahead were removed.", "count", len(runs)+len(unreadable))
}

// forgetLeftAhead removes the workspace of sandbox id, made ahead by an
// earlier engine, and forgets it.
func (e *Engine) forgetLeftAhead(id string) {
	sb := &Sandbox{ID: id, Kind: "oneshot", OwnWorkspace: true, Workspace: filepath.Join(e.workspacesDir(), id)}
	// Its tmpfs, if any, is not among this engine's mounts to release.
	_ = diskquota.Unmount(sb.Workspace)
	e.forgetAhead(sb)
}

// aheadRequest reports whether a one-shot of cfg and req may take a
// sandbox made ahead: the default sandbox (a name and a timeout change
// nothing of it) and a plain foreground command.
func aheadRequest(cfg SandboxConfig, req RunRequest) bool {
	cfg.Name, cfg.TimeoutMs = nil, nil
	if !reflect.ValueOf(cfg).IsZero() {
		return false
	}
	return req.Language == "" && req.Code == "" && len(req.Env) == 0 && !req.Background &&
		!req.Trace && req.Attach == nil && req.TTLMs == 0 && req.IdleTTLMs == 0
}

// sameSandbox reports whether want, the sandbox a run would get, is the
// one made ahead but for what a request may change (its name, timeout)
// and what makes each one-shot its own (id, uid, workspace, times).
func sameSandbox(want, made Sandbox) bool {
	want.ID, want.Name, want.TimeoutMs = made.ID, made.Name, made.TimeoutMs
	want.Kind, want.Workspace, want.OwnWorkspace = made.Kind, made.Workspace, made.OwnWorkspace
	want.UID, want.GID = made.UID, made.GID
	want.CreatedAt, want.UpdatedAt, want.LastUsedAt = made.CreatedAt, made.UpdatedAt, made.LastUsedAt
	return reflect.DeepEqual(want, made)
}

// runAhead runs a one-shot in a sandbox made ahead when the request may
// take one and one is ready (ok), through the gate every run passes, in
// run()'s order: the plan, admission, the policy and the backend's
// choice, and the record on disk as running, all before the command is
// handed over. A sandbox that is no longer what run() would make once the
// run has its place is given up, and the run gets one made as usual in
// that place. ok is false when the run is to start as usual.
func (e *Engine) runAhead(ctx context.Context, cfg SandboxConfig, req RunRequest) (res *RunResult, err error, ok bool) {
	if !aheadRequest(cfg, req) || principal.Of(ctx).Tenant != "" {
		// A tenant's one-shot has the tenant's runtime/ and quotas: it
		// is made for its run.
		return nil, nil, false
	}
	ro := e.takeAhead()
	if ro == nil {
		e.fillAhead()
		return nil, nil, false
	}
	want, err := e.newSandbox(cfg)
	if err != nil {
		e.putBackAhead(ro)
		return nil, err, true // as RunOnce would say it
	}
	if !sameSandbox(want, ro.sb) {
		e.putBackAhead(ro)
		return nil, nil, false
	}
	sb := ro.sb
	sb.Name, sb.TimeoutMs = want.Name, want.TimeoutMs
	if cfg.Name == nil {
		sb.Name = "one-shot"
	}
	p, err := e.planFor(&sb, req)
	if err != nil {
		e.putBackAhead(ro)
		return nil, err, true
	}
	p.kind = "oneshot"
	rec := e.newRecord(ctx, p)
	// In run()'s order: the disk, a place in the runner, then the policy
	// and the backend, which may have changed while the run waited for
	// its place.
	if err := e.roomOnDisk(); err != nil {
		e.putBackAhead(ro)
		return e.refuseAhead(&rec, err)
	}
	release, err := e.admit(ctx, sb.ID, false)
	if err != nil {
		e.putBackAhead(ro)
		return e.refuseAhead(&rec, err)
	}
	p.runID = rec.ID
	backend, isolation, err := e.choose(ctx, p)
	if err != nil {
		release()
		e.putBackAhead(ro)
		return e.refuseAhead(&rec, err)
	}
	rec.Guard = p.guarded
	moved := backend != ro.r.backend || isolation != ro.r.isolation // a backend came or went
	if moved || !e.aheadFresh(ro) {
		// The sandbox is not the one run() would make now (the settings or
		// the policy changed while the run waited, or it died): the run
		// gets one made now, in the place it holds.
		go e.giveUpAhead(ro)
		if moved {
			e.aheadChanged()
		}
		res, err := e.oneShot(ctx, cfg, req, release)
		return res, err, true
	}
	rec.Backend, rec.Isolation, rec.AheadID = backend.Name(), isolation, ro.id
	// The record answers for the sandbox from here; the one to replace it
	// is reserved in the same commit.
	edits := []store.AheadEdit{{ID: sb.ID}}
	next, replaced := e.newAheadIdent()
	if replaced {
		edits = append(edits, next.edit(e))
	}
	if err := e.recordRunning(rec, edits...); err != nil {
		release()
		if replaced {
			next.release(e)
		}
		e.putBackAhead(ro)
		return e.refuseAhead(&rec, err)
	}
	if replaced {
		e.reserveAhead(next)
	}
	ro.r.stdout.setTee(teeTo(req.Stdout, ro.r.output))
	ro.r.stderr.setTee(teeTo(req.Stderr, ro.r.output))
	start := time.Now()
	if err := ro.proc.Go(p.argv); err != nil {
		release()
		e.giveUpAhead(ro)
		e.fillAhead()
		if errors.Is(err, syscall.EPIPE) {
			// Killed from outside in the moment between the last look
			// (Waiting) and the command.
			err = errors.New("the sandbox made ahead for this run ended just before it got its command (was it killed?); nothing ran: run it again")
		}
		return e.refuseAhead(&rec, fmt.Errorf("%s could not start the sandbox: %w", backend.Name(), err))
	}
	res = e.started(ctx, p, rec, ro.r, ro.proc, start, release)
	e.purgeAfter(&sb, e.fillAhead)
	return res, nil, true
}

// refuseAhead is refuse, for runAhead. The refused run names a sandbox
// that never was, as run()'s refusals of one-shots do: the one it took
// goes back to those made ahead, for the next run.
func (e *Engine) refuseAhead(rec *RunRecord, err error) (*RunResult, error, bool) {
	if rec.AheadID == "" {
		rec.SandboxID = randomHex(6)
	}
	res, err := e.refuse(rec, err)
	return res, err, true
}
