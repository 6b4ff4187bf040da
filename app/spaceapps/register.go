package spaceapps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/backends"
)

// Limits of a copy.
const (
	MaxCopyBytes   = 1 << 30
	MaxCopyEntries = 100000
)

// Register registers (or, for an id already known, updates) the app in
// req.Dir. Nothing is registered when anything is wrong: a *app.FieldError
// names the field. An update keeps the app's data (files not in the new
// copy stay), its configuration (unless the manifest forces its sandbox,
// which is then re-applied) and its environment unless one is given.
func (s *Supervisor) Register(ctx context.Context, req RegisterRequest) (*RegisterReply, error) {
	if req.Dir == "" {
		return nil, bad("dir", "", "give the app's folder (an absolute path with senclaw-app.json at its root)")
	}
	dir, err := s.e.CheckHostDir("dir", req.Dir, principal.Of(ctx).Tenant, req.InPlace)
	if err != nil {
		return nil, err
	}
	m, _, err := readManifestAs(dir, s.user())
	if err != nil {
		return nil, err
	}
	if err := s.roomForApp(m.ID); err != nil {
		return nil, err
	}
	if req.InPlace {
		return s.register(ctx, m, req.Env, dir, dir, true)
	}
	release, err := s.stageSlot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	stage, err := s.stage(m.ID)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	if err := copyTree(dir, stage, s.user()); err != nil {
		return nil, err
	}
	return s.register(ctx, m, req.Env, dir, stage, false)
}

// stage makes a fresh staging folder for app id's files.
func (s *Supervisor) stage(id string) (string, error) {
	d, err := os.MkdirTemp(s.dirs.staging, id+"-")
	if err != nil {
		return "", fmt.Errorf("making a staging folder: %w", err)
	}
	return d, nil
}

// register checks everything, then installs the staged files (unless in
// place) and stores the record. source is where it came from (a folder,
// or "zip upload"); files is the folder holding the files to install.
func (s *Supervisor) register(ctx context.Context, m *Manifest, env map[string]string, source, files string, inPlace bool) (*RegisterReply, error) {
	if err := checkAppEnv(env); err != nil {
		return nil, err
	}
	if err := s.roomForApp(m.ID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	a := s.apps[m.ID]
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, &app.ConflictError{Reason: "the engine is stopping"}
	}
	p := principal.Of(ctx)
	var old *record
	if a != nil {
		a.op.Lock()
		defer a.op.Unlock()
		a.mu.Lock()
		cp := *a.rec
		old = &cp
		a.mu.Unlock()
		if !p.Sees(old.Tenant) {
			// Ids come from manifests: another tenant's is taken, which
			// says no more of it than that.
			return nil, &app.ConflictError{Reason: fmt.Sprintf("the app id %q is taken: give the app another id in its senclaw-app.json", m.ID)}
		}
	}
	set := defaultSettings()
	if old != nil {
		set = old.Sandbox
		if env == nil {
			env = old.Env
		}
	}
	forced := m.Sandbox != nil && m.Sandbox.Force
	tenant := p.Tenant
	if old != nil {
		tenant = old.Tenant
	}
	if old == nil && tenant != "" {
		// A tenant's app never reads the whole disk: strict, unless the
		// manifest says allowlist.
		set.ReadMode = string(backends.FsStrict)
	}
	if old == nil || forced {
		// A first registration takes the manifest's sandbox block as its
		// defaults; a forced block is re-applied every time. A block
		// that drops force drops the lock and keeps the confinement.
		set = applyManifest(set, m.Sandbox)
	}
	port := m.Runtime.Port
	if port == 0 && old != nil {
		port = old.Port
	}
	set, err := s.checkSettings(ctx, set, port, tenant, "sandbox.")
	if err != nil {
		return nil, err
	}
	if err := mayRunUnsandboxed(p, set); err != nil {
		return nil, err
	}
	if env == nil {
		env = map[string]string{}
	}
	if err := s.req.check(ctx, m.Requires, env, s.effectiveBackend(ctx, set) == "docker"); err != nil {
		return nil, err
	}
	dir := files
	if !inPlace {
		dir = filepath.Join(s.dirs.apps, m.ID)
	}
	user, created, err := s.ensureUser(ctx, m.ID, dir, set, port)
	if err != nil {
		return nil, err
	}
	undo := func() {
		if created {
			_ = s.e.DeleteAppSandbox(ctx, sandboxID(m.ID))
		}
	}
	if !inPlace {
		if err := s.install(files, dir, user); err != nil {
			undo()
			return nil, err
		}
	}
	now := s.clock.Now().UTC()
	rec := &record{
		Manifest: *m, Registration: randomHex(8), Dir: dir, InPlace: inPlace, Source: source, Env: env,
		Sandbox: set, Forced: forced, Port: port, RegisteredAt: now, Tenant: tenant,
	}
	switch {
	case set.Enabled:
	case old != nil && !forced:
		rec.DisabledBy = old.DisabledBy // its configuration is kept
	default:
		rec.DisabledBy = DisabledByManifest
	}
	note := "registered"
	if old != nil {
		rec.RegisteredAt, rec.StoppedByUser, rec.Tenant = old.RegisteredAt, old.StoppedByUser, old.Tenant
		rec.Launches, rec.TotalLaunches, rec.Last = old.Launches, old.TotalLaunches, old.Last
		note = "updated"
		if !old.InPlace && inPlace {
			note += fmt.Sprintf("; it now runs in place from %s, and the engine's earlier copy %s stays on disk (senclaw apps rm --purge removes only a copy)", dir, old.Dir)
		}
	}
	if err := s.e.PutSpaceApp(m.ID, rec); err != nil {
		undo()
		return nil, fmt.Errorf("saving Space App %s: %w", m.ID, err)
	}
	if a == nil {
		na, err := s.newState(rec)
		if err != nil {
			undo()
			return nil, err
		}
		s.mu.Lock()
		s.apps[m.ID] = na
		s.mu.Unlock()
		a = na
	} else {
		a.mu.Lock()
		a.rec = rec
		needs := len(s.restartReasons(a)) > 0
		a.mu.Unlock()
		if needs {
			note += "; it runs the earlier registration: restart it to run this one"
		}
	}
	if inPlace {
		note += "; it runs in place from " + dir
	} else {
		note += "; its files are in " + dir
	}
	s.log.Info("A Space App was registered.", "app", m.ID, "dir", dir, "inPlace", inPlace)
	return &RegisterReply{App: s.view(a, true), Created: old == nil, Note: note}, nil
}

// mayRunUnsandboxed refuses p an app that would run with no sandbox:
// only the owner runs code on this machine with nothing in the way
// (apps:unsandboxed).
func mayRunUnsandboxed(p principal.Principal, set SandboxSettings) error {
	if set.Enabled || p.IsOwner() {
		return nil
	}
	return &principal.DeniedError{Principal: p, Scope: principal.AppsHost, What: "a Space App that runs with no sandbox (its sandbox settings say enabled false, the default when the manifest has no sandbox block)"}
}

// checkAppEnv validates the app's own environment.
func checkAppEnv(env map[string]string) error {
	if len(env) > 128 {
		return bad("env", len(env), "at most 128 variables")
	}
	for k, v := range env {
		if !envKeyRE().MatchString(k) {
			return bad("env", k, "variable names are letters, digits and _, not starting with a digit")
		}
		switch k {
		case "PORT", "SENCLAW_APP_ID", "SENCLAW_APP_LAUNCH", "SENCLAW_API_URL", "SENCLAW_APP_TOKEN", "SENCLAW_SANDBOX":
			return bad("env", k, "is set by the engine for every launch")
		}
		if strings.ContainsRune(v, 0) || len(v) > 128<<10 {
			return bad("env."+k, nil, "values are at most 128 KiB with no NUL byte")
		}
	}
	return nil
}

// install moves the staged files into dir (the engine's copy of the app),
// replacing files of the same name and keeping the others (the app's data
// from earlier runs). When the engine is root, everything is given to
// user, the app's own, who must be able to write the app's directory. It
// walks both trees by descriptor, one folder at a time (an os.Root of
// each), so its work is linear in the number of files and folders
// whatever their depth, and a link the app left in its directory leads
// nowhere else.
func (s *Supervisor) install(stage, dir string, user *backends.Credential) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	src, err := os.OpenRoot(stage)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer dst.Close()
	uid, gid := -1, -1
	if user != nil {
		uid, gid = int(user.UID), int(user.GID)
	}
	if err := installTree(src, dst, ".", uid, gid); err != nil {
		return fmt.Errorf("installing the app's files: %w", err)
	}
	if uid >= 0 {
		_ = os.Lchown(dir, uid, gid)
	}
	return nil
}

// installTree copies the folder src into dst, rel being where they lie
// in the app (for errors); files and folders are given to uid and gid
// when uid is not negative.
func installTree(src, dst *os.Root, rel string, uid, gid int) error {
	f, err := src.Open(".")
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		name, at := e.Name(), path.Join(rel, e.Name())
		switch {
		case e.IsDir():
			if err := dst.Mkdir(name, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			if fi, err := dst.Lstat(name); err != nil || !fi.IsDir() {
				return fmt.Errorf("%s in the app's directory is not a folder; remove it", at)
			}
			if uid >= 0 {
				_ = dst.Lchown(name, uid, gid)
			}
			subSrc, err := src.OpenRoot(name)
			if err != nil {
				return err
			}
			subDst, err := dst.OpenRoot(name)
			if err != nil {
				subSrc.Close()
				return err
			}
			err = installTree(subSrc, subDst, at, uid, gid)
			subSrc.Close()
			subDst.Close()
			if err != nil {
				return err
			}
		case e.Type().IsRegular():
			if err := installFile(src, dst, name, uid, gid); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		default:
			return fmt.Errorf("%s is not a regular file or folder", at)
		}
	}
	return nil
}

// installFile copies the regular file name of src over dst's (whatever
// that was, a link included: it is removed first).
func installFile(src, dst *os.Root, name string, uid, gid int) error {
	in, err := src.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	_ = dst.Remove(name)
	out, err := dst.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm()&0o755|0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if uid >= 0 {
		_ = dst.Lchown(name, uid, gid)
	}
	return err
}

// Remove stops app id and forgets it: its sandbox, record and log. With
// purge its files go too, but only the engine's own copy; a folder run in
// place is never touched. files says what became of them.
func (s *Supervisor) Remove(ctx context.Context, id string, purge bool) (files string, err error) {
	a, err := s.find(id)
	if err != nil {
		return "", err
	}
	a.op.Lock()
	defer a.op.Unlock()
	s.halt(a, stoppedOnRemove)
	if err := s.e.DeleteAppSandbox(ctx, sandboxID(id)); err != nil {
		var nf *app.NotFoundError
		if !errors.As(err, &nf) {
			return "", fmt.Errorf("removing the app's sandbox: %w", err)
		}
	}
	if err := s.e.DeleteSpaceApp(id); err != nil {
		return "", err
	}
	s.mu.Lock()
	delete(s.apps, id)
	s.mu.Unlock()
	a.log.close()
	_ = os.RemoveAll(filepath.Join(s.dirs.logs, id))
	_ = os.RemoveAll(filepath.Join(s.dirs.tmp, id))
	a.mu.Lock()
	dir, inPlace := a.rec.Dir, a.rec.InPlace
	a.mu.Unlock()
	own := filepath.Join(s.dirs.apps, id)
	switch {
	case inPlace:
		return "in place: " + dir + " untouched", nil
	case !purge:
		return "still on disk at " + dir, nil
	case filepath.Clean(dir) != own || !slugRE().MatchString(id):
		return "still on disk at " + dir + " (not the engine's own copy)", nil
	}
	if err := os.RemoveAll(own); err != nil {
		return "", fmt.Errorf("removing the app's files: %w", err)
	}
	return "purged", nil
}
