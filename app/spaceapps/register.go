package spaceapps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/senclaw/sandbox/app"
)

// RegisterRequest registers an app from a folder.
type RegisterRequest struct {
	// Dir is the app's folder (absolute), with senclaw-app.json at its
	// root.
	Dir string `json:"dir"`
	// InPlace runs it where it is, after the same guards as sandbox
	// mounts; otherwise it is copied into the engine's apps/<id>/.
	InPlace bool `json:"inPlace"`
	// Env is the app's own environment (requires.env names what must be
	// in it). Nil keeps what an earlier registration gave.
	Env map[string]string `json:"env"`
}

// RegisterReply is the answer of a registration.
type RegisterReply struct {
	App AppView `json:"app"`
	// Created is false when an app of that id was updated.
	Created bool   `json:"created"`
	Note    string `json:"note"`
}

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
	dir, err := s.e.CheckHostDir("dir", req.Dir, req.InPlace)
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
	var old *record
	if a != nil {
		a.op.Lock()
		defer a.op.Unlock()
		a.mu.Lock()
		cp := *a.rec
		old = &cp
		a.mu.Unlock()
	}
	set := defaultSettings()
	if old != nil {
		set = old.Sandbox
		if env == nil {
			env = old.Env
		}
	}
	forced := m.Sandbox != nil && m.Sandbox.Force
	if old == nil || forced {
		// A first registration takes the manifest's sandbox block as its
		// defaults; a forced block is re-applied every time. A block
		// that drops force drops the lock and keeps the confinement.
		set = set.apply(m.Sandbox)
	}
	port := m.Runtime.Port
	if port == 0 && old != nil {
		port = old.Port
	}
	set, err := s.checkSettings(ctx, set, port, "sandbox.")
	if err != nil {
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
		if err := s.install(files, dir); err != nil {
			return nil, err
		}
	}
	now := s.clock.Now().UTC()
	rec := &record{
		Manifest: *m, Registration: randomHex(8), Dir: dir, InPlace: inPlace, Source: source, Env: env,
		Sandbox: set, Forced: forced, Port: port, RegisteredAt: now,
	}
	note := "registered"
	if old != nil {
		rec.RegisteredAt, rec.StoppedByUser = old.RegisteredAt, old.StoppedByUser
		rec.Launches, rec.TotalLaunches, rec.Last = old.Launches, old.TotalLaunches, old.Last
		note = "updated"
		if !old.InPlace && inPlace {
			note += fmt.Sprintf("; it now runs in place from %s, and the engine's earlier copy %s stays on disk (senclaw apps rm --purge removes only a copy)", dir, old.Dir)
		}
	}
	if err := s.e.PutSpaceApp(m.ID, rec); err != nil {
		return nil, fmt.Errorf("saving Space App %s: %w", m.ID, err)
	}
	if a == nil {
		na, err := s.newState(rec)
		if err != nil {
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
// from earlier runs). When the engine is root, everything is given to the
// sandbox user, who must be able to write the app's directory.
func (s *Supervisor) install(stage, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	uid := s.sandboxUser()
	err = filepath.WalkDir(stage, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(stage, path)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if err := root.Mkdir(rel, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			if fi, err := root.Lstat(rel); err != nil || !fi.IsDir() {
				return fmt.Errorf("%s in the app's directory is not a folder; remove it", rel)
			}
		} else {
			// Through the root: a symlink the app left in its directory
			// cannot lead the copy outside it.
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			info, _ := d.Info()
			_ = root.Remove(rel)
			if err := root.WriteFile(rel, data, info.Mode().Perm()&0o755|0o600); err != nil {
				return err
			}
		}
		if uid >= 0 {
			_ = root.Lchown(rel, uid, uid)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("installing the app's files: %w", err)
	}
	if uid >= 0 {
		_ = os.Lchown(dir, uid, uid)
	}
	return nil
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
	s.halt(a)
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
