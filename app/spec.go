package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/senclaw/sandbox/backends"
)

// spec resolves p into the backend's Spec: the environment built from
// nothing, the paths to hide, the user to run as, the code file written.
func (e *Engine) spec(p *plan, rec *RunRecord) (*backends.Spec, error) {
	sb := p.sb
	user := e.sandboxUser()
	if p.offPath {
		user = nil // the documented off path runs as the engine's user
	}
	if rec.Backend == "bwrap" && user != nil {
		if err := reachable(sb.Workspace, *user); err != nil {
			return nil, err
		}
		for _, m := range sb.Mounts {
			if err := reachable(m.Source, *user); err != nil {
				return nil, err
			}
		}
	}
	argv := p.argv
	if p.code != "" {
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
	spec := shapeSpec(sb, user)
	spec.RunID, spec.Argv, spec.Env = rec.ID, argv, env
	switch sb.FsMode {
	case backends.FsAllowlist:
		spec.ReadPaths = e.Settings().Allowlist
	case backends.FsOpen:
		for _, h := range e.paths.hidden() {
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
// sandbox (a container): no command, no environment, nothing written.
func shapeSpec(sb *Sandbox, user *backends.Credential) *backends.Spec {
	return &backends.Spec{
		SandboxID: sb.ID,
		Workspace: sb.Workspace,
		// An agent's project dir was validated (canonical) when the
		// sandbox was made; the engine's own workspace is its own path.
		WorkspaceExact: sb.Kind == "agent" || canonical(sb.Workspace) == sb.Workspace,
		FsMode:         sb.FsMode,
		Mounts:         sb.Mounts,
		Network:        sb.Network,
		Ports:          sb.Ports,
		Limits:         sb.limits(),
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
	if p.offPath && e.opts.HomeDir != "" {
		home = e.opts.HomeDir
	}
	if p.sb.Kind == "agent" || p.sb.Kind == "oneshot" {
		// The sandbox's private /tmp: it keeps a project dir clean, and a
		// throwaway workspace needs no folder of its own for it.
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
		delete(vars, "TMPDIR")
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

// engineDir makes dir name inside the workspace, owned by the sandbox
// user, and returns its path.
func (e *Engine) engineDir(sb *Sandbox, name string) (string, error) {
	root, err := os.OpenRoot(sb.Workspace)
	if err != nil {
		return "", fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	if err := e.engineDirIn(root, name); err != nil {
		return "", err
	}
	return filepath.Join(sb.Workspace, name), nil
}

// engineDirIn makes sure the directory name exists in the workspace root
// (the sandbox user's, when the engine is root). Everything goes through
// root, so a symlink the sandboxed code left in the workspace cannot lead
// the engine out of it.
func (e *Engine) engineDirIn(root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("%s in the workspace is not a directory; remove it", name)
	case err == nil:
		return nil
	}
	if err := root.Mkdir(name, 0o700); err != nil && !os.IsExist(err) {
		return fmt.Errorf("creating %s in the workspace: %w", name, err)
	}
	if u := e.sandboxUser(); u != nil {
		_ = root.Lchown(name, int(u.UID), int(u.GID))
	}
	return nil
}

// createInWorkspace creates the new file dir/name in the workspace for
// the engine (a run's code, a background run's log), given to the sandbox
// user when the engine is root. The file is created through an os.Root of
// the workspace, exclusively, and chowned by its descriptor: sandboxed
// code that swaps dir for a symlink, even while the engine works, cannot
// make it write or chown anything outside the workspace.
func (e *Engine) createInWorkspace(sb *Sandbox, dir, name string) (*os.File, error) {
	root, err := os.OpenRoot(sb.Workspace)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	if err := e.engineDirIn(root, dir); err != nil {
		return nil, err
	}
	f, err := root.OpenFile(dir+"/"+name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if u := e.sandboxUser(); u != nil {
		_ = f.Chown(int(u.UID), int(u.GID))
	}
	return f, nil
}

// chownToSandbox gives path to the sandbox user when the engine is root.
func (e *Engine) chownToSandbox(path string) {
	if u := e.sandboxUser(); u != nil {
		_ = os.Lchown(path, int(u.UID), int(u.GID))
	}
}

// reachable checks that user can walk down to path: a root engine runs
// sandboxed code as an unprivileged user, and bubblewrap opens the
// workspace and mounts as that user.
func reachable(path string, user backends.Credential) error {
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
