package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/app/sandboxuid"
	"github.com/senclaw/sandbox/app/store"
	"github.com/senclaw/sandbox/backends"
)

// A root engine runs each sandbox's code as a uid of its own
// (app/sandboxuid): its range is resolved and claimed when the engine
// starts, every stored sandbox gets its uid back, and each new one
// (one-shots and sandboxes made ahead too) takes one that it gives back
// when it is gone. The documented off paths run as the engine's user, so
// none of them ever runs as a sandbox's uid; a Space App without a
// sandbox runs as its own sandbox's uid, which no other sandbox has.

// uidsKey is the settings-bucket key of what the store keeps of the uids.
const uidsKey = "sandbox_uids"

// uidScheme is the version of uidsState this code writes: 1 since
// sandboxes have uids of their own. A store without it is of the old
// scheme, where every workspace belonged to Settings.SandboxUID.
const uidScheme = 1

// uidsState is what the store keeps: the scheme, the range in use, and
// the pool's mark (sandboxuid.NewPool).
type uidsState struct {
	Version int    `json:"version"`
	Range   string `json:"range"`
	Mark    uint32 `json:"mark"`
}

// sandboxUIDs are a root engine's range and pool.
type sandboxUIDs struct {
	pool  *sandboxuid.Pool
	claim *sandboxuid.Claim
	// r is the range this engine's sandboxes have (or, when err says it
	// cannot be had, the one they would have).
	r sandboxuid.Range
	// moved are the stored sandboxes given a new uid at this start: what
	// a container backend keeps for them (a container whose processes
	// run as the old uid) is removed, to be made again at their next run.
	moved map[string]bool

	mu sync.Mutex
	// err, when set, is why no sandbox may run: the range could not be
	// had (another engine claims it), or the system now gives ids of it
	// to an account or a subordinate range.
	err error
	// files is what the system's account files were when they were last
	// read: a change is read again before the next sandbox is made.
	files string
}

// setupUIDs resolves and claims the range, gives every stored sandbox its
// uid back (a new one, with its files, when its own is no longer its to
// have: the old scheme's shared uid, a range changed by hand, an id a
// process uses) and records the scheme. It runs once the runs an earlier
// engine left are reaped, before anything new runs.
//
// The range is the engine's for good once chosen: "auto" picks it at the
// first start and the store keeps it, so a sandbox keeps its uid across
// restarts, and the claim on this machine lasts while the engine is
// stopped. When the system later gives ids of it to an account or a
// subordinate range (a useradd), nothing is moved behind anyone's back:
// no sandbox runs, the error and the doctor say what overlaps and what to
// do.
func (e *Engine) setupUIDs() error {
	if e.opts.EUID != 0 {
		return nil
	}
	sys := e.system()
	files := accountFiles(sys)
	taken, err := sandboxuid.ReadTaken(sys)
	if err != nil {
		return fmt.Errorf("reading the system's accounts for the sandbox uids: %w", err)
	}
	procs, err := sandboxuid.ProcessIDs(sys.Proc)
	if err != nil {
		return err
	}
	var st uidsState
	if err := e.store.GetSetting(uidsKey, &st); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("reading the sandbox uids: %w", err)
	}
	sandboxes, err := e.storedSandboxes()
	if err != nil {
		return err
	}
	ours := map[uint32]bool{}
	for _, sb := range sandboxes {
		ours[sb.UID] = true
	}
	r, claim, err := e.claimRange(taken, procs, st)
	e.uids.r = r
	if err != nil {
		var ce *sandboxuid.ClaimedError
		if !errors.As(err, &ce) {
			return err
		}
		e.uids.err = refused("this engine's sandbox uids %s are another SenClaw engine's (%s), and two engines must not share a uid: move one of them to a free range (senclaw settings set sandboxUidRange=%s) and start it again", r, ce.By, e.freeBlock(taken, procs))
		e.log.Error("The sandbox uid range is another engine's; no sandbox runs until one of them moves.", "err", err)
		return nil
	}
	e.uids.claim, e.uids.files = claim, files
	if c := taken.Conflicts(r); len(c) > 0 {
		e.uids.err = e.overlapError(r, c, taken, procs)
		e.log.Error("The sandbox uid range overlaps ids the system gives others; no sandbox runs until one of them moves.", "range", r.String(), "used", strings.Join(c, "; "))
		return nil
	}
	left := e.leftFiles(sandboxes)
	used := func(id uint32) string {
		if why := taken.Why(id); why != "" {
			return why
		}
		if path, ok := left[id]; ok {
			return "the files left in " + path + ", of no sandbox now"
		}
		// A process of one of the stored sandboxes (a container kept
		// between runs) is the sandbox's own; any other is not ours.
		if pid, ok := procs[id]; ok && !ours[id] {
			return fmt.Sprintf("process %d, which is no sandbox of this engine", pid)
		}
		return ""
	}
	for id, pid := range procs {
		if r.Contains(id) && !ours[id] && id != r.First {
			e.log.Warn("A host process runs as a uid of the sandbox range: no sandbox gets that uid.", "uid", id, "pid", pid)
		}
	}
	save := func(mark uint32) error {
		return e.store.PutSetting(uidsKey, uidsState{Version: uidScheme, Range: r.String(), Mark: mark})
	}
	mark := st.Mark
	if st.Range != r.String() {
		mark = 0
	}
	e.uids.pool = sandboxuid.NewPool(r, used, mark, save)
	e.uids.pool.ListProcesses(func() (map[uint32]int, error) { return sandboxuid.ProcessIDs(sys.Proc) })
	e.rehome(sandboxes, st.Version < uidScheme)
	if st.Version < uidScheme || st.Range != r.String() {
		if err := save(mark); err != nil {
			return fmt.Errorf("recording the sandbox uids: %w", err)
		}
		e.forgetRange(st.Range)
	}
	e.setTrialUser()
	return nil
}

// leftFiles are the owners of what the workspaces dir holds of no stored
// sandbox (a removal that failed, a one-shot's left by a crash): no new
// sandbox gets such a uid while the engine runs.
func (e *Engine) leftFiles(sandboxes []Sandbox) map[uint32]string {
	stored := map[string]bool{}
	for _, sb := range sandboxes {
		stored[sb.ID] = true
	}
	entries, _ := os.ReadDir(e.workspacesDir())
	left := map[uint32]string{}
	for _, ent := range entries {
		if stored[ent.Name()] {
			continue
		}
		path := filepath.Join(e.workspacesDir(), ent.Name())
		if fi, err := os.Lstat(path); err == nil {
			if uid, _, ok := ownerOf(fi); ok && uid != 0 {
				left[uid] = path
			}
		}
	}
	return left
}

// claimsDir is Options.UIDClaims, or this machine's.
func (e *Engine) claimsDir() string {
	if e.opts.UIDClaims != "" {
		return e.opts.UIDClaims
	}
	return sandboxuid.ClaimsDir
}

// claimRange resolves the sandboxUidRange setting and claims it: a range
// set by hand, else ("auto") the range the store says this engine's
// sandboxes have, else (the first start) the first free block.
func (e *Engine) claimRange(taken *sandboxuid.Taken, procs map[uint32]int, st uidsState) (sandboxuid.Range, *sandboxuid.Claim, error) {
	dir, who := e.claimsDir(), e.opts.DataDir
	setting := e.Settings().SandboxUIDRange
	r, auto, err := sandboxuid.ParseRange(setting)
	if err != nil {
		return r, nil, badField("sandboxUidRange", setting, "%v", err)
	}
	if auto {
		if old, oldAuto, err := sandboxuid.ParseRange(st.Range); err == nil && !oldAuto {
			r, auto = old, false
		}
	}
	if !auto {
		claim, err := sandboxuid.ClaimRange(dir, r, who)
		return r, claim, err
	}
	var claim *sandboxuid.Claim
	var claimErr error
	r, err = taken.PickBlock(func(r sandboxuid.Range) bool {
		if runsIn(procs, r) {
			return false
		}
		claim, claimErr = sandboxuid.ClaimRange(dir, r, who)
		var ce *sandboxuid.ClaimedError
		if errors.As(claimErr, &ce) {
			return false
		}
		return true // claimed, or an error that ends the search
	})
	switch {
	case err != nil:
		return r, nil, err
	case claimErr != nil:
		return r, nil, claimErr
	}
	return r, claim, nil
}

// runsIn reports whether a process runs as an id of r.
func runsIn(procs map[uint32]int, r sandboxuid.Range) bool {
	for id := range procs {
		if r.Contains(id) {
			return true
		}
	}
	return false
}

// freeBlock names a block this engine could move to now, for the
// messages that say how to move ("FIRST-LAST" when none is free).
func (e *Engine) freeBlock(taken *sandboxuid.Taken, procs map[uint32]int) string {
	dir, who := e.claimsDir(), e.opts.DataDir
	r, err := taken.PickBlock(func(r sandboxuid.Range) bool {
		return !runsIn(procs, r) && sandboxuid.Free(dir, r, who) == ""
	})
	if err != nil {
		return "FIRST-LAST"
	}
	return r.String()
}

// overlapError is why no sandbox runs when the system gives ids of the
// range r to others (conflicts).
func (e *Engine) overlapError(r sandboxuid.Range, conflicts []string, taken *sandboxuid.Taken, procs map[uint32]int) error {
	return refused("this engine's sandbox uids %s now overlap ids this machine gives others: %s; a sandbox sharing a uid with them could be reached by their processes, so no sandbox runs: move that account or range off %s, or move this engine's sandboxes, with their files, to a free range (senclaw settings set sandboxUidRange=%s), then start the engine again", r, strings.Join(conflicts, "; "), r, e.freeBlock(taken, procs))
}

// forgetRange gives up the claim on old (the range the sandboxes had
// before this start) once no stored sandbox has a uid of it.
func (e *Engine) forgetRange(old string) {
	r, auto, err := sandboxuid.ParseRange(old)
	if err != nil || auto || r == e.uids.r {
		return
	}
	sandboxes, err := e.storedSandboxes()
	if err != nil {
		return
	}
	for _, sb := range sandboxes {
		if r.Contains(sb.UID) {
			return // its files are still that uid's: the claim stays
		}
	}
	if err := sandboxuid.Forget(e.claimsDir(), r, e.opts.DataDir); err != nil {
		e.log.Warn("The claim on the sandbox uids the sandboxes had before could not be given up.", "range", r.String(), "err", err)
	}
}

// uidsErr is why no sandbox may run now (nil: they may). The system's
// account files are read again when they changed: an account or a
// subordinate range given ids of the range since the start stops new
// sandboxes and runs from then on.
func (e *Engine) uidsErr() error {
	u := &e.uids
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err != nil || u.pool == nil {
		return u.err
	}
	sys := e.system()
	files := accountFiles(sys)
	if files == u.files {
		return nil
	}
	taken, err := sandboxuid.ReadTaken(sys)
	if err != nil {
		return refused("the system's account files cannot be read, so no sandbox uid is known to be free: %v", err)
	}
	u.files = files
	if c := taken.Conflicts(u.r); len(c) > 0 {
		procs, _ := sandboxuid.ProcessIDs(sys.Proc)
		u.err = e.overlapError(u.r, c, taken, procs)
		e.log.Error("The sandbox uid range now overlaps ids the system gives others; no sandbox runs until one of them moves.", "range", u.r.String(), "used", strings.Join(c, "; "))
	}
	return u.err
}

// checkUIDRange validates the sandboxUidRange setting ("" is auto): a
// range set by hand must hold none of the ids this machine's accounts and
// subordinate ranges use. The range applies when the engine starts next.
func (e *Engine) checkUIDRange(s *Settings) error {
	r, auto, err := sandboxuid.ParseRange(s.SandboxUIDRange)
	if err != nil {
		return badField("sandboxUidRange", s.SandboxUIDRange, "%v", err)
	}
	if auto {
		s.SandboxUIDRange = sandboxuid.Auto
		return nil
	}
	s.SandboxUIDRange = r.String()
	taken, err := sandboxuid.ReadTaken(e.system())
	if err != nil {
		return fmt.Errorf("reading the system's accounts: %w", err)
	}
	if c := taken.Conflicts(r); len(c) > 0 {
		return badField("sandboxUidRange", s.SandboxUIDRange, "holds ids this machine uses: %s; pick a range above them all, or use %q", strings.Join(c, "; "), sandboxuid.Auto)
	}
	return nil
}

// system is Options.System, or this machine's.
func (e *Engine) system() sandboxuid.System {
	if e.opts.System == (sandboxuid.System{}) {
		return sandboxuid.Host()
	}
	return e.opts.System
}

// storedSandboxes reads every stored sandbox.
func (e *Engine) storedSandboxes() ([]Sandbox, error) {
	var out []Sandbox
	err := e.store.EachSandbox(func(data []byte) error {
		var sb Sandbox
		if err := json.Unmarshal(data, &sb); err != nil {
			return err
		}
		out = append(out, sb)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the sandboxes: %w", err)
	}
	return out, nil
}

// rehome gives each stored sandbox its uid back, or a new one with its
// files when its own is not its to have. oldScheme: the store is of the
// shared-uid scheme, whose workspaces belong to Settings.SandboxUID.
func (e *Engine) rehome(sandboxes []Sandbox, oldScheme bool) {
	set := e.Settings()
	for i := range sandboxes {
		sb := &sandboxes[i]
		from := backends.Credential{UID: sb.UID, GID: sb.GID}
		if sb.UID == 0 {
			if !oldScheme {
				from = backends.Credential{} // nothing of it is anyone's yet
			} else {
				from = backends.Credential{UID: set.SandboxUID, GID: set.SandboxGID}
			}
		} else if ok, why := e.uids.pool.Hold(sb.UID, sb.ID); ok {
			continue
		} else {
			e.log.Warn("A sandbox's uid is not its own any more; it gets a new one, with its files.", "sandbox", sb.ID, "reason", why)
		}
		id, err := e.uids.pool.Take(sb.ID)
		if err != nil {
			e.log.Error("A sandbox got no uid of its own; its runs are refused.", "sandbox", sb.ID, "err", err)
			continue
		}
		sb.UID, sb.GID = id, id
		if e.uids.moved == nil {
			e.uids.moved = map[string]bool{}
		}
		e.uids.moved[sb.ID] = true
		if from.UID != 0 && e.enginesFiles(sb) {
			n, skipped, err := chownTree(sb.Workspace, from, backends.Credential{UID: id, GID: id})
			if err != nil {
				// The sandbox is kept on its old files' owner: saved with
				// no new uid, the next start tries again.
				e.uids.pool.Release(id, sb.ID)
				e.log.Error("A sandbox's files could not be given to its new uid; its runs are refused until they are.", "sandbox", sb.ID, "workspace", sb.Workspace, "err", err)
				continue
			}
			e.log.Info("A sandbox's files were given to its own uid; its container, if it has one, is made again at its next run.", "sandbox", sb.ID, "from", from.UID, "to", id, "files", n, "skipped", skipped)
		}
		if err := e.store.PutSandbox(sb.ID, sb); err != nil {
			e.uids.pool.Release(id, sb.ID)
			e.log.Error("A sandbox's new uid could not be saved.", "sandbox", sb.ID, "err", err)
		}
	}
}

// enginesFiles reports whether sb's workspace is the engine's to give
// away: its own workspace, or the engine's copy of a Space App (in the
// data dir). A person's folder (a project dir, an app run in place) is
// never changed.
func (e *Engine) enginesFiles(sb *Sandbox) bool {
	ws := filepath.Clean(sb.Workspace)
	if sb.OwnWorkspace {
		return ws == filepath.Join(e.workspacesDir(), sb.ID)
	}
	rel, err := filepath.Rel(e.opts.DataDir, ws)
	return sb.Kind == KindApp && err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

// takeUID gives a new sandbox of a root engine its own uid (nothing for
// an engine that is not root).
func (e *Engine) takeUID(sb *Sandbox) error {
	if e.opts.EUID != 0 {
		return nil
	}
	if err := e.uidsErr(); err != nil {
		return err
	}
	if e.uids.pool == nil {
		return refused("the engine has no sandbox uids (they could not be set up when it started; see its log)")
	}
	id, err := e.uids.pool.Take(sb.ID)
	if err != nil {
		return refused("%v", err)
	}
	sb.UID, sb.GID = id, id
	return nil
}

// releaseUID gives sb's uid back once nothing of sb is left.
func (e *Engine) releaseUID(sb *Sandbox) {
	if e.uids.pool != nil && sb.UID != 0 {
		e.uids.pool.Release(sb.UID, sb.ID)
	}
}

// userOf is who sb's code runs as: nil (the engine's own user, in a user
// namespace) unless the engine is root, else the sandbox's own uid. A
// sandbox of a root engine with no uid gives uid 0, which every backend
// and jailfs refuse: nothing runs as root.
func (e *Engine) userOf(sb *Sandbox) *backends.Credential {
	if e.opts.EUID != 0 {
		return nil
	}
	return &backends.Credential{UID: sb.UID, GID: sb.GID}
}

// fileUser is who the engine acts as in sb's files (jailfs): sb's user,
// but for a one-shot of the documented off path, which has no uid (every
// sandboxed one-shot has one) and whose workspace is the engine's own.
func (e *Engine) fileUser(sb *Sandbox) *backends.Credential {
	if e.opts.EUID == 0 && sb.UID == 0 && sb.Kind == "oneshot" {
		return nil
	}
	return e.userOf(sb)
}

// checkUser is userOf for the checks made before a new sandbox has its
// uid (can its user write a mount?): the engine's own uid of the range,
// which, like a new sandbox's, owns nothing and is in no group.
func (e *Engine) checkUser(sb *Sandbox) *backends.Credential {
	if e.opts.EUID == 0 && sb.UID == 0 {
		return e.UnownedUser()
	}
	return e.userOf(sb)
}

// runUser is who p's code runs as, or why it may not run: the engine's
// own user on the documented off paths (but an unconfined Space App,
// which keeps its sandbox's uid), else the sandbox's.
func (e *Engine) runUser(p *plan) (*backends.Credential, error) {
	if p.offPath && !p.keepSandboxUser {
		return nil, nil
	}
	u := e.userOf(p.sb)
	if u == nil {
		return nil, nil
	}
	if err := e.uidsErr(); err != nil {
		return nil, err
	}
	if u.UID == 0 || u.GID == 0 {
		return nil, refused("sandbox %s has no uid of its own yet (the engine could not give it one when it started; see its log), and nothing runs as root: start the engine again, or recreate the sandbox", p.sb.ID)
	}
	return u, nil
}

// UnownedUser is the engine's own uid of its sandbox range for a root
// engine (nil otherwise): no sandbox runs as it and it owns no sandbox's
// files, so reading a person's folder as it hands over only what anyone
// may read, and the probes' trial sandboxes run as it.
func (e *Engine) UnownedUser() *backends.Credential {
	if e.opts.EUID != 0 || e.uids.pool == nil {
		if e.opts.EUID == 0 {
			return &backends.Credential{} // refused by every user of it
		}
		return nil
	}
	id := e.uids.pool.Reserved()
	return &backends.Credential{UID: id, GID: id}
}

// SandboxUser is who sandbox id's code runs as (nil: the engine's own
// user, when it is not root).
func (e *Engine) SandboxUser(id string) (*backends.Credential, error) {
	var sb Sandbox
	if err := e.store.GetSandbox(id, &sb); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, &NotFoundError{Kind: "sandbox", ID: id}
		}
		return nil, err
	}
	return e.userOf(&sb), nil
}

// SandboxUIDs says what uids a root engine's sandboxes run as, for the
// doctor.
type SandboxUIDs struct {
	// Range is the range in use; Err, when set, is why no sandbox may
	// run (the range could not be had, or it overlaps what the system
	// gives others).
	Range sandboxuid.Range
	Err   error
	// Conflicts are what this machine's account files say uses ids of
	// the range.
	Conflicts []string
	// Later, when set, says where useradd would give ids of the range to
	// accounts made later (/etc/login.defs).
	Later string
	// Free is a block this engine could move to now ("FIRST-LAST" when
	// none is).
	Free string
	// Foreign are host processes that run as uids of the range no
	// sandbox of this engine holds (no sandbox gets those either).
	Foreign []UIDUse
}

// UIDUse is a process that runs as a uid.
type UIDUse struct {
	UID     uint32 `json:"uid"`
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

// UIDs looks at the engine's sandbox uids now; ok is false for an engine
// that is not root.
func (e *Engine) UIDs() (SandboxUIDs, bool) {
	if e.opts.EUID != 0 {
		return SandboxUIDs{}, false
	}
	out := SandboxUIDs{Err: e.uidsErr(), Range: e.uids.r, Free: "FIRST-LAST"}
	sys := e.system()
	ids, err := sandboxuid.ProcessIDs(sys.Proc)
	if taken, err := sandboxuid.ReadTaken(sys); err == nil {
		out.Free = e.freeBlock(taken, ids)
		if out.Range != (sandboxuid.Range{}) {
			out.Conflicts, out.Later = taken.Conflicts(out.Range), taken.Later(out.Range)
		}
	}
	p := e.uids.pool
	if p == nil {
		if out.Err == nil {
			out.Err = errors.New("the sandbox uids were not set up when the engine started; see its log")
		}
		return out, true
	}
	if err != nil {
		out.Err = err
		return out, true
	}
	for id, pid := range ids {
		if out.Range.Contains(id) && id != p.Reserved() && p.Holder(id) == "" {
			comm, _ := os.ReadFile(filepath.Join(sys.Proc, strconv.Itoa(pid), "comm"))
			out.Foreign = append(out.Foreign, UIDUse{UID: id, PID: pid, Command: strings.TrimSpace(string(comm))})
		}
	}
	slices.SortFunc(out.Foreign, func(a, b UIDUse) int { return int(a.UID) - int(b.UID) })
	return out, true
}

// setTrialUser gives the backends that start sandboxes of their own (a
// probe's trial) the engine's own uid of the range (UnownedUser).
func (e *Engine) setTrialUser() {
	u := e.UnownedUser()
	for _, b := range e.opts.Backends {
		if t, ok := b.(backends.TrialUserSetter); ok {
			t.SetTrialUser(u)
		}
	}
}
