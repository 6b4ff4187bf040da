package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/backends"
)

// Persistent sandboxes kept ready: a run in a persistent sandbox pays a
// whole bwrap start (namespaces, mounts, the barrier, the cgroups), which
// needs nothing of its command. Once a sandbox has run a plain command
// (ready.go's readyRequest), the engine starts its next run ahead, as it
// makes one-shot sandboxes ahead (ahead.go): bwrap with the sandbox's
// exact spec, the forwarder waiting in the command's place for the
// command on a pipe (backends.AheadStarter). The sandbox's next plain run
// takes it and hands it its command; a new one is started for the run
// after. One is kept per sandbox, for the readyIdleMinutes setting after
// its last run (0: none is kept).
//
// What the run gets is what run() would have given it: it passes the
// same gate in the same order (the disk, a place in the runner, the
// tenant's, the policy and the backend, the record on disk as running),
// and its spec is built again, as run() builds it, and must be the one
// the sandbox was started with but for the run's id, command and
// output; anything else (the sandbox's configuration changed: mounts,
// ports, fs mode, limits, env; a folder it binds is no longer what it
// was; the settings or the policy changed) gives the ready start up and
// the run starts as usual. An update, a stop, a kill of all its
// processes or a delete of the sandbox gives it up at once.
//
// Limits: the waiting start is in a run cgroup of its own below the
// sandbox's, as any run of the sandbox is, so the sandbox's pids and
// memory limits hold for it and its runs together: it holds two
// processes (bwrap's init and the waiting forwarder) and about a MiB.
//
// Crashes: each is in the store's ahead bucket (aheadEntry.Sandbox set)
// before anything of it exists, so the next start kills and removes what
// an engine that died left of it (reapAhead), and never the sandbox's
// workspace, which is the sandbox's own.

// readyStart is a persistent sandbox's next run, started ahead.
type readyStart struct {
	aheadSandbox
	key  string // its entry in the store's ahead bucket
	idle *time.Timer
	// stdin is the write end of the start's standard input: the run's
	// input (an agent shell's, attached) is copied into it, and it is
	// closed for a run with none, which then reads an end at once.
	stdin *os.File
}

// readyState is the engine's ready starts, by sandbox id.
type readyState struct {
	mu     sync.Mutex
	starts map[string]*readyStart
	// making are the starts being made, each closed once it is done; a
	// run that finds one being made waits for it (it is further on than
	// a start the run would make), unless another run waits already
	// (claimed).
	making  map[string]chan struct{}
	claimed map[string]bool
	gen     uint64 // bumped when settings, policy or any sandbox change
	closed  bool
	wg      sync.WaitGroup
}

// readyRequest reports whether p's run may take a ready start, and be
// followed by one: a plain foreground command or argv in a persistent
// sandbox of this machine that is not traced, has no listen ports (a
// waiting start would take their connections with no command to answer
// them) and no secrets, on the documented sandboxed path. A sandbox with
// network or connect and loopback rules may: its start holds the proxy
// and the forwarder as a run does, and the proxy reads its rules at each
// connection.
func readyRequest(p *plan) bool {
	sb, req := p.sb, p.req
	switch {
	case sb.Kind != "" && sb.Kind != "agent", sb.Engine != "", remoteSandbox(sb):
		return false
	case sb.TraceEnabled, len(sb.Ports.Listen) > 0, len(sb.Secrets) > 0, sb.APIAccess:
		return false
	case p.offPath, p.launch != nil, p.admitted != nil, p.newWorkspace, p.code != "", p.refusal != nil, p.by != nil:
		return false
	}
	// An attached run (the agent shell's) may take one when it needs no
	// terminal: its input is copied into the start's (readyStart.stdin).
	return req.Language == "" && req.Code == "" && !req.Background && !req.Trace &&
		(req.Attach == nil || req.Attach.Terminal == nil) && req.TTLMs == 0 && req.IdleTTLMs == 0
}

// readyIdle is how long a ready start waits for its run.
func (e *Engine) readyIdle() time.Duration {
	return time.Duration(e.Settings().ReadyIdleMinutes) * time.Minute
}

// readyIdent names a ready start before it is made: its entry's id in
// the store and the run id its cgroups carry.
type readyIdent struct{ key, run string }

// newReadyIdent names the next ready start of sandbox id, and returns its
// entry for the store.
func (e *Engine) newReadyIdent(id string) (readyIdent, store.AheadEdit) {
	ri := readyIdent{key: randomHex(6), run: e.newRunID()}
	return ri, store.AheadEdit{ID: ri.key, Value: aheadEntry{RunID: ri.run, Made: e.now().UTC(), Sandbox: id}}
}

// readyAfter starts the next run of p's sandbox ahead, unless one is there
// or being started; reserved, when set, is its entry, on disk already
// (runReady puts it in the commit of the run before).
func (e *Engine) readyAfter(p *plan, reserved *readyIdent) {
	if !readyRequest(p) || e.readyIdle() <= 0 {
		e.dropReadyIdent(reserved)
		return
	}
	id := p.sb.ID
	a := &e.ready
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.making[id] != nil || a.starts[id] != nil {
		e.dropReadyIdent(reserved)
		return
	}
	if a.making == nil {
		a.making, a.claimed = map[string]chan struct{}{}, map[string]bool{}
	}
	done := make(chan struct{})
	a.making[id] = done
	a.wg.Add(1)
	go func(gen uint64) {
		defer a.wg.Done()
		defer close(done)
		rs, err := e.makeReady(id, reserved)
		a.mu.Lock()
		delete(a.making, id)
		delete(a.claimed, id)
		switch {
		case err != nil:
			e.log.Debug("A persistent sandbox's next run could not be started ahead; it starts as usual.", "sandbox", id, "reason", err)
		case a.closed || gen != a.gen || a.starts[id] != nil:
			defer e.giveUpReady(rs)
		default:
			rs.gen = gen
			if a.starts == nil {
				a.starts = map[string]*readyStart{}
			}
			a.starts[id] = rs
			rs.idle = time.AfterFunc(e.readyIdle(), func() { e.readyIdled(id, rs) })
		}
		a.mu.Unlock()
	}(a.gen)
}

// dropReadyIdent forgets the entry of a ready start that is not made.
func (e *Engine) dropReadyIdent(ri *readyIdent) {
	if ri != nil {
		go func() { _ = e.store.DeleteAhead(ri.key) }()
	}
}

// makeReady starts sandbox id's next run ahead, as run() would start it
// but for the command: under reserved's names when given (its entry is on
// disk), else under new ones recorded now.
func (e *Engine) makeReady(id string, reserved *readyIdent) (*readyStart, error) {
	// What the sandbox gets is looked at first: a sandbox whose backend
	// starts nothing ahead (Docker, Landlock) costs its runs no commit.
	sb, err := e.Get(id)
	var p *plan
	if err == nil {
		p, err = e.planFor(sb, RunRequest{Argv: []string{"true"}})
	}
	if err == nil && !readyRequest(p) {
		err = errors.New("the sandbox is not one whose runs are started ahead")
	}
	ctx, cancel := context.WithTimeout(context.Background(), aheadTimeout)
	defer cancel()
	var backend backends.Backend
	var isolation string
	if err == nil {
		backend, isolation, err = e.choose(ctx, p)
	}
	pre, ok := backend.(backends.AheadStarter)
	if err == nil && !ok {
		err = fmt.Errorf("the %s backend starts no sandbox ahead of its command", backend.Name())
	}
	// Its entry is on disk before anything of it exists.
	if err == nil && reserved == nil {
		ri, ed := e.newReadyIdent(id)
		if err = e.store.PutAhead(ed.ID, ed.Value); err != nil {
			return nil, fmt.Errorf("recording a ready start: %w", err)
		}
		reserved = &ri
	}
	if err != nil {
		e.dropReadyIdent(reserved)
		return nil, err
	}
	rs := &readyStart{key: reserved.key}
	rs.sb, rs.id = *sb, reserved.run
	fail := func(err error) (*readyStart, error) {
		e.giveUpReady(rs)
		return nil, err
	}
	rec := RunRecord{ID: rs.id, SandboxID: sb.ID, Backend: backend.Name(), Isolation: isolation}
	r, err := e.prepare(p, &rec, backend, isolation)
	if err != nil {
		return fail(err)
	}
	rs.r = r
	if r.spec.Helper == "" {
		r.spec.Helper = e.opts.Forwarder
	}
	r.spec.Argv = nil
	in, out, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	rs.stdin, r.spec.Stdin = out, in
	proc, err := pre.StartAhead(ctx, r.spec)
	in.Close() // bwrap has its own
	if err != nil {
		return fail(err)
	}
	rs.proc = proc
	return rs, nil
}

// giveUpReady ends a ready start no run takes, and forgets it.
func (e *Engine) giveUpReady(rs *readyStart) {
	if rs.idle != nil {
		rs.idle.Stop()
	}
	if rs.stdin != nil {
		rs.stdin.Close()
	}
	if rs.proc != nil {
		_ = rs.proc.Kill()
		_, _ = rs.proc.Wait()
	}
	if rs.r != nil {
		rs.r.abandon()
	}
	if rs.key == "" {
		return // its entry went with the commit of the run that took it
	}
	if err := e.store.DeleteAhead(rs.key); err != nil {
		e.log.Warn("A ready start could not be forgotten.", "sandbox", rs.sb.ID, "err", err)
	}
}

// readyIdled gives up sandbox id's ready start rs after the idle time.
func (e *Engine) readyIdled(id string, rs *readyStart) {
	a := &e.ready
	a.mu.Lock()
	mine := a.starts[id] == rs
	if mine {
		delete(a.starts, id)
	}
	a.mu.Unlock()
	if mine {
		e.giveUpReady(rs)
	}
}

// takeReady takes sandbox id's ready start, if there is one, or waits
// for the one being made if no other run waits for it.
func (e *Engine) takeReady(ctx context.Context, id string) *readyStart {
	a := &e.ready
	a.mu.Lock()
	if done := a.making[id]; done != nil && !a.claimed[id] {
		a.claimed[id] = true
		a.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		a.mu.Lock()
	}
	defer a.mu.Unlock()
	rs := a.starts[id]
	if rs == nil {
		return nil
	}
	delete(a.starts, id)
	rs.idle.Stop()
	return rs
}

// putBackReady returns a ready start taken for a run that did not start.
func (e *Engine) putBackReady(rs *readyStart) {
	a := &e.ready
	a.mu.Lock()
	defer a.mu.Unlock()
	id := rs.sb.ID
	if a.closed || rs.gen != a.gen || a.starts[id] != nil || !rs.proc.Waiting() {
		go e.giveUpReady(rs)
		return
	}
	a.starts[id] = rs
	rs.idle.Reset(e.readyIdle())
}

// readyFresh reports whether rs was started under the settings and the
// policy in force and still waits for its command.
func (e *Engine) readyFresh(rs *readyStart) bool {
	a := &e.ready
	a.mu.Lock()
	defer a.mu.Unlock()
	return rs.gen == a.gen && rs.proc.Waiting()
}

// readyChanged gives up sandbox id's ready start (every one, for ""),
// and any being started, after a change: it returns once they are gone
// (for one sandbox, once the one being started for it is gone too, so
// that a stop or a delete finds nothing of it going).
func (e *Engine) readyChanged(id string) {
	a := &e.ready
	a.mu.Lock()
	a.gen++
	var stale []*readyStart
	for sid, rs := range a.starts {
		if id == "" || sid == id {
			stale = append(stale, rs)
			delete(a.starts, sid)
		}
	}
	var making chan struct{}
	if id != "" {
		making = a.making[id]
	}
	a.mu.Unlock()
	for _, rs := range stale {
		e.giveUpReady(rs)
	}
	if making != nil {
		select {
		case <-making:
		case <-time.After(aheadTimeout):
		}
	}
}

// closeReady gives up every ready start and waits for those being made.
func (e *Engine) closeReady() {
	a := &e.ready
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	e.readyChanged("")
	made := make(chan struct{})
	go func() { a.wg.Wait(); close(made) }()
	select {
	case <-made:
	case <-time.After(closeAheadWait):
		e.log.Warn("A ready start being made did not finish before the engine closed; the next start removes it.")
	}
}

// sameConfig reports whether sandbox now is the one a ready start was
// started from, but for what is derived when it is read or changes as it
// is used, and what shapes no start (its name, its timeout).
func sameConfig(now, then Sandbox) bool {
	for _, sb := range []*Sandbox{&now, &then} {
		sb.Name, sb.TimeoutMs = "", 0
		sb.State, sb.Container, sb.LastError = "", "", ""
		sb.UpdatedAt, sb.LastUsedAt = time.Time{}, time.Time{}
	}
	return reflect.DeepEqual(now, then)
}

// sameSpec reports whether want, the spec run() builds for a run, is
// got, the one a ready start was started with, but for what is the
// run's own: its id, command and output, and the callbacks.
func sameSpec(want, got *backends.Spec) bool {
	w, g := *want, *got
	for _, s := range []*backends.Spec{&w, &g} {
		s.RunID, s.Argv, s.Helper = "", nil, ""
		s.Stdin, s.Stdout, s.Stderr = nil, nil, nil
		s.Terminal, s.TerminalFDs = nil, nil
		s.Trace, s.Refused = nil, nil
		if s.Net != nil {
			// Its callbacks are the sandbox's (the proxy's refusals by
			// sandbox id), made anew with each spec.
			n := *s.Net
			n.Refused, n.Serve = nil, nil
			s.Net = &n
		}
	}
	return reflect.DeepEqual(w, g)
}

// runReady runs p in its sandbox's ready start when there is one that is
// still what run() would start (ok); ok is false when the run is to start
// as usual.
func (e *Engine) runReady(ctx context.Context, p *plan) (res *RunResult, err error, ok bool) {
	if !readyRequest(p) {
		return nil, nil, false
	}
	rs := e.takeReady(ctx, p.sb.ID)
	if rs == nil {
		return nil, nil, false
	}
	if !sameConfig(*p.sb, rs.sb) {
		go e.giveUpReady(rs)
		return nil, nil, false
	}
	rec := e.newRecord(ctx, p)
	// In run()'s order: the disk, a place in the runner and the tenant's,
	// the policy and the backend, then the record on disk as running.
	if err := e.roomOnDisk(); err != nil {
		e.putBackReady(rs)
		res, err := e.refuse(&rec, err)
		return res, err, true
	}
	release, err := e.admit(ctx, p.sb.ID, false)
	if err != nil {
		e.putBackReady(rs)
		res, err := e.refuse(&rec, err)
		return res, err, true
	}
	tenantDone, err := e.admitTenant(p.sb.Tenant)
	if err != nil {
		release()
		e.putBackReady(rs)
		res, err := e.refuse(&rec, err)
		return res, err, true
	}
	all := release
	release = func() { tenantDone(); all() }
	p.runID = rec.ID
	backend, isolation, err := e.choose(ctx, p)
	if err != nil {
		release()
		e.putBackReady(rs)
		res, err := e.refuse(&rec, err)
		return res, err, true
	}
	rec.Backend, rec.Isolation, rec.Guard = backend.Name(), isolation, p.guarded
	if backend != rs.r.backend || isolation != rs.r.isolation || !e.readyFresh(rs) {
		release()
		go e.giveUpReady(rs)
		return nil, nil, false
	}
	r, err := e.prepare(p, &rec, backend, isolation)
	if err != nil {
		release()
		e.putBackReady(rs)
		res, err := e.refuse(&rec, err)
		return res, err, true
	}
	if !sameSpec(r.spec, rs.r.spec) {
		// Something the start was made with changed (a folder, a mask, a
		// setting): the run starts as usual, with what is now.
		r.abandon()
		release()
		go e.giveUpReady(rs)
		return nil, nil, false
	}
	rec.AheadID = rs.id
	// The record answers for the start from here; the entry of the one
	// to follow it is in the same commit.
	next, nextEntry := e.newReadyIdent(p.sb.ID)
	if err := e.recordRunning(rec, store.AheadEdit{ID: rs.key}, nextEntry); err != nil {
		r.abandon()
		release()
		e.putBackReady(rs)
		res, err := e.refuse(&rec, err)
		return res, err, true
	}
	rs.key = ""
	// The run's output is what the start writes; what the start held of
	// its own (its refusals' watch, its placeholders) goes, the run's
	// own being held now.
	rs.r.stdout.setTee(teeTo(p.req.Stdout, r.output))
	rs.r.stderr.setTee(teeTo(p.req.Stderr, r.output))
	r.stdout, r.stderr = rs.r.stdout, rs.r.stderr
	rs.r.abandon()
	if at := r.at; at != nil && at.stdinR != nil {
		// The run's input, as attach made it, goes on into the start's;
		// the attachment's end closes it (attached.release).
		src, dst := at.stdinR, rs.stdin
		at.stdinR = nil
		go func() {
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}()
	} else {
		rs.stdin.Close()
	}
	rs.stdin = nil
	start := time.Now()
	if err := rs.proc.Go(p.argv); err != nil {
		r.abandon()
		release()
		rs.r = nil
		go e.giveUpReady(rs)
		if errors.Is(err, syscall.EPIPE) {
			err = errors.New("the sandbox's ready start ended just before it got its command (was it killed?); nothing ran: run it again")
		}
		e.readyAfter(p, &next)
		res, err := e.refuse(&rec, fmt.Errorf("%s could not start the sandbox: %w", backend.Name(), err))
		return res, err, true
	}
	res = e.started(ctx, p, rec, r, rs.proc, start, release)
	// The next is started once this run is over: started while it goes,
	// it would take the run's time (measured: a third more for `true`).
	// A run that comes while it is being made waits for it.
	e.readyAfter(p, &next)
	return res, nil, true
}
