package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends"
)

// spec resolves p into the backend's Spec: the environment built from
// nothing, the paths to hide, the user to run as, the code file written.
func (e *Engine) spec(p *plan, rec *RunRecord) (*backends.Spec, error) {
	sb := p.sb
	remote := remoteSandbox(sb)
	if !remote {
		// (A remote sandbox's mounts are copies, read when they were made.)
		if err := e.checkStoredDirs(sb); err != nil {
			return nil, err
		}
	}
	// The documented off path runs as the engine's user; everything
	// else as the sandbox's own uid.
	user, err := e.runUser(p)
	if err != nil {
		return nil, err
	}
	mounts := sb.Mounts
	if !p.offPath {
		mounts = append(slices.Clone(mounts), e.tenantMounts(sb, sb.TraceEnabled || p.req.Trace)...)
	}
	wsIDMap := false
	if user != nil && !remote {
		if mounts, err = e.idmapMounts(mounts, user, rec.Backend); err != nil {
			return nil, err
		}
		if wsIDMap, err = e.idmapWorkspace(sb, user, rec.Backend); err != nil {
			return nil, err
		}
	}
	if (rec.Backend == "bwrap" || rec.Backend == "landlock") && user != nil {
		// An idmapped workspace is bound from where the engine attached
		// it, as an idmapped mount is.
		if err := reachable(sb.Workspace, *user); err != nil && !wsIDMap {
			return nil, err
		}
		for _, m := range mounts {
			// An idmapped mount is bound from where the engine attached
			// it; the sandbox user never walks to its source.
			if err := reachable(m.Source, *user); err != nil && !m.IDMap {
				return nil, err
			}
		}
	}
	argv := p.argv
	var files []backends.File
	if p.code != "" && remote {
		// The backend puts it in the workspace there, just before the run.
		rel := ".runs/" + rec.ID + p.codeFile
		files = append(files, backends.File{Path: rel, Data: []byte(p.code)})
		argv = append(slices.Clone(argv), remoteWorkspace+"/"+rel)
	} else if p.code != "" {
		file, err := e.writeCode(p, rec.ID)
		if err != nil {
			return nil, err
		}
		argv = append(slices.Clone(argv), file)
		if rec.Backend != "docker" {
			if _, err := lookIn(argv[0], e.opts.SystemPath); err != nil {
				return nil, err
			}
		}
	}
	env, err := e.buildEnv(p)
	if err != nil {
		return nil, err
	}
	spec := e.shapeSpec(sb, user)
	spec.RunID, spec.Argv, spec.Env = rec.ID, argv, env
	spec.Mounts, spec.WorkspaceIDMap, spec.Files = mounts, wsIDMap, files
	if p.hostConfined {
		if !p.offPath {
			// A direct sandbox's confined run is no off path: a
			// switched-off runtime is masked, as in every sandbox.
			e.maskInterpreters(spec)
		}
		e.confineHostSpec(p, spec)
		return spec, nil
	}
	if !p.offPath {
		// A switched-off runtime is masked in every sandbox; only the
		// documented off path, which has no barrier, runs unmasked.
		e.maskInterpreters(spec)
	}
	switch sb.FsMode {
	case backends.FsAllowlist:
		allow := e.Settings().Allowlist
		if sb.Allowlist != nil {
			allow = sb.Allowlist // narrowed by the project's policy file
		}
		spec.ReadPaths = e.tenantReadPaths(sb.Tenant, allow)
	case backends.FsOpen:
		var others *backends.Credential
		if e.opts.EUID == 0 {
			// A desktop engine's sandbox is its user, whom the other
			// homes' modes keep out as they keep that user out.
			others = user
		}
		for _, h := range e.paths.hidden(others) {
			// A path the sandbox user cannot even walk to is already
			// hidden by the kernel, and bwrap (running as that user)
			// could not mount over it.
			if user == nil || reachable(h, *user) == nil {
				spec.Hidden = append(spec.Hidden, h)
			}
		}
	}
	return spec, nil
}

// shapeSpec is the part of a Spec that shapes what a backend keeps for the
// sandbox (a container): no command, no environment, nothing written. A
// tenant's sandbox has the tenant's runtime/ mounted too.
func (e *Engine) shapeSpec(sb *Sandbox, user *backends.Credential) *backends.Spec {
	return &backends.Spec{
		SandboxID: sb.ID,
		Workspace: sb.Workspace,
		// An agent's project dir was validated (canonical) when the
		// sandbox was made; the engine's own workspace is its own path.
		// (A remote sandbox's is a path in its container.)
		WorkspaceExact: !remoteSandbox(sb) && (sb.Kind == "agent" || canonical(sb.Workspace) == sb.Workspace),
		FsMode:         sb.FsMode,
		Mounts:         append(slices.Clone(sb.Mounts), e.tenantMounts(sb, false)...),
		Network:        sb.Network,
		Ports:          sb.Ports,
		Limits:         limitsOf(sb),
		User:           user,
		Image:          sb.Image,
		// A throwaway sandbox lives for one run: a container backend
		// takes a container from its warm pool and removes it after.
		OneShot: sb.Kind == "oneshot",
	}
}

// buildEnv builds the run's environment from nothing: nothing of the
// engine's own environment reaches sandboxed code.
func (e *Engine) buildEnv(p *plan) ([]string, error) {
	home := p.sb.Workspace
	tmp := filepath.Join(home, ".tmp")
	if p.offPath && !p.hostConfined && e.opts.HomeDir != "" {
		// (A confined host exec keeps its workspace: the owner's home is
		// out of its reach.)
		home = e.opts.HomeDir
	}
	if p.sb.Kind == "agent" || p.sb.Kind == "oneshot" || p.sb.Kind == KindApp || !p.sb.OwnWorkspace {
		// The sandbox's private /tmp: it keeps a project dir (or an app's
		// own directory) clean, and a throwaway workspace needs no folder
		// of its own for it.
		tmp = "/tmp"
	} else if !p.offPath {
		if _, err := e.engineDir(p.sb, ".tmp"); err != nil {
			return nil, err
		}
	}
	vars := map[string]string{
		"PATH":                    e.opts.SystemPath,
		"HOME":                    home,
		"TMPDIR":                  tmp,
		"LANG":                    "C.UTF-8",
		"PYTHONDONTWRITEBYTECODE": "1",
		"PYTHONUNBUFFERED":        "1",
		"SENCLAW_SANDBOX":         "1",
	}
	if p.offPath {
		delete(vars, "SENCLAW_SANDBOX")
		if !p.hostConfined {
			// (Landlock moves a TMPDIR of /tmp into the workspace.)
			delete(vars, "TMPDIR")
		}
	}
	if !p.offPath {
		tenantEnv(p.sb, vars)
	}
	for k, v := range p.sb.Env {
		vars[k] = v
	}
	for k, v := range p.req.Env {
		vars[k] = v
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	return env, nil
}

// engineDir makes dir name inside the workspace, as the sandbox user,
// and returns its path.
func (e *Engine) engineDir(sb *Sandbox, name string) (string, error) {
	err := e.inWorkspace(sb, func(d *jailfs.Dir) error { return engineDirIn(d, name) })
	if err != nil {
		return "", err
	}
	return filepath.Join(sb.Workspace, name), nil
}

// engineDirIn makes sure the directory name exists in the workspace d.
func engineDirIn(d *jailfs.Dir, name string) error {
	fi, err := d.Lstat(name)
	switch {
	case err == nil && !fi.Mode.IsDir():
		return fmt.Errorf("%s in the workspace is not a directory; remove it", name)
	case err == nil:
		return nil
	}
	if err := d.MkdirAll(name, 0o700); err != nil {
		return fmt.Errorf("creating %s in the workspace: %w", name, err)
	}
	return nil
}

// createInWorkspace creates the new file dir/name in the workspace for
// the engine (a run's code, a background run's log), exclusively, as the
// sandbox user (so it is that user's file, as if the run had made it).
// It goes through jailfs like the file API: sandboxed code that swaps
// dir, or the workspace's own path, for a symlink, even while the engine
// works, cannot make it create anything elsewhere.
func (e *Engine) createInWorkspace(sb *Sandbox, dir, name string) (*os.File, error) {
	var f *os.File
	err := e.inWorkspace(sb, func(d *jailfs.Dir) error {
		if err := engineDirIn(d, dir); err != nil {
			return err
		}
		var err error
		f, err = d.Open(dir+"/"+name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		return err
	})
	return f, err
}

// inWorkspace runs fn in sb's workspace as the sandbox user (inJail).
func (e *Engine) inWorkspace(sb *Sandbox, fn func(d *jailfs.Dir) error) error {
	err := e.inJail(sb, jailed{root: sb.Workspace, name: ".", rel: "."}, fn)
	if err != nil && !strings.Contains(err.Error(), "workspace") {
		return fmt.Errorf("in the workspace: %w", err)
	}
	return err
}

// reachable checks that user can walk down to path: a root engine runs
// sandboxed code as an unprivileged user, and bubblewrap opens the
// workspace and mounts as that user.
func reachable(path string, user backends.Credential) error {
	if !filepath.IsAbs(path) {
		// Relative, the walk up would end at "." and never at "/".
		return fmt.Errorf("checking %q: not an absolute path", path)
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("checking %s: %w", dir, err)
		}
		uid, gid, ok := ownerOf(fi)
		mode := fi.Mode().Perm()
		if ok {
			search := mode&0o001 != 0 ||
				(uid == user.UID && mode&0o100 != 0) ||
				(gid == user.GID && mode&0o010 != 0)
			if !search {
				return fmt.Errorf("%s is not reachable by the sandbox user %d: %s (mode %o) is not searchable by it; keep the data dir and mounts outside private folders such as /root (for example --data-dir /var/lib/senclaw)", path, user.UID, dir, mode)
			}
		}
		if dir == "/" {
			return nil
		}
	}
}

// lookIn finds an executable named name in the directories of pathList.
func lookIn(name, pathList string) (string, error) {
	if p, ok := backends.FindExecutable(name, pathList); ok {
		return p, nil
	}
	return "", &FieldError{Field: "language", Value: name, Reason: fmt.Sprintf("is not installed on this machine (looked in %s); install it, for example apt-get install %s", pathList, debianPackage(name))}
}

func debianPackage(bin string) string {
	switch bin {
	case "node":
		return "nodejs"
	}
	return bin
}
