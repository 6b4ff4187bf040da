package app

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/idmap"
)

// A root engine runs sandboxed code as an unprivileged sandbox user, who
// often cannot write a folder given read-write (root's 0755 /srv/www), or
// even reach one given read-only (~/data under root's 0700 /root). Such a
// mount, and a project folder given as the workspace (run --here, the
// agent shell's project), is bound through an idmapped mount
// (backends/idmap) where the kernel, the folder's file system and the
// backend can make one: its owner is the sandbox user there, and what the
// sandbox writes belongs to the owner; a read-only one stays read-only.
// Where one cannot be made, the sandbox is refused when it is created (a
// run, when it starts), with the reason, rather than meeting "Permission
// denied" later.

// mappingOf returns the idmap mapping of a directory's owner to user.
func mappingOf(dir string, user *backends.Credential) (idmap.Mapping, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return idmap.Mapping{}, err
	}
	uid, gid, ok := ownerOf(fi)
	if !ok {
		return idmap.Mapping{}, errors.New("its owner is not known")
	}
	return idmap.Mapping{OwnerUID: uid, OwnerGID: gid, SandboxUID: user.UID, SandboxGID: user.GID}, nil
}

// needsIDMap reports whether the mount m needs an idmapped mount: the
// engine is root and user, the sandbox's, cannot write the source
// (read-write) or walk into it (read-only: a folder on its way is closed
// to it, as root's 0700 /root is, or the folder itself). An error is a reason
// the sandbox can never write it (a read-only file system).
func (e *Engine) needsIDMap(m backends.Mount, user *backends.Credential) (bool, error) {
	if user == nil {
		return false, nil
	}
	if m.ReadOnly {
		err := jailfs.CanReach(user, m.Source)
		return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM), nil
	}
	err := jailfs.CanWrite(user, m.Source)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		return true, nil
	case errors.Is(err, syscall.EROFS):
		return false, errors.New("is on a read-only file system; mount it read-only (SRC:TARGET:ro)")
	}
	return false, err
}

// checkIDMapped refuses sb's read-write mounts that its sandbox user cannot
// write and that cannot be made writable for it through an idmapped mount,
// with the reason and what to do.
func (e *Engine) checkIDMapped(sb Sandbox) error {
	user := e.checkUser(&sb)
	for i, m := range sb.Mounts {
		field := "mounts[" + strconv.Itoa(i) + "].source"
		need, err := e.needsIDMap(m, user)
		if err != nil {
			return badField(field, m.Source, "%v", err)
		}
		if !need {
			continue
		}
		why := e.noIDMap(sb.Backend)
		if why == "" {
			mapping, err := mappingOf(m.Source, user)
			if err == nil {
				err = e.idmapCheck(m.Source, mapping)
			}
			if err != nil {
				why = err.Error()
			}
		}
		if why != "" && m.ReadOnly {
			return badField(field, m.Source, "the sandbox user (uid %d) cannot reach it (a folder on its way, or the folder itself, is closed to it), and it cannot be bound for it with an idmapped mount: %s. Let uid %d walk to it, or give a folder it can reach", user.UID, why, user.UID)
		}
		if why != "" {
			return badField(field, m.Source, "the sandbox user (uid %d) cannot write it, and it cannot be made writable for it with an idmapped mount: %s. Give it read-only (SRC:TARGET:ro), or let uid %d write it", user.UID, why, user.UID)
		}
	}
	return e.checkProjectIDMap(sb)
}

// checkProjectIDMap refuses sb's project folder (its workspace, when it
// is not the engine's own) that its sandbox user cannot write and that
// cannot be made writable for it through an idmapped mount.
func (e *Engine) checkProjectIDMap(sb Sandbox) error {
	if _, err := e.idmapWorkspace(&sb, e.checkUser(&sb), sb.Backend); err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			return badField("projectDir", sb.Workspace, "%s", re.Reason)
		}
		return err
	}
	return nil
}

// idmapWorkspace reports whether a run of sb as user on backend binds
// its workspace through an idmapped mount: the engine is root, the
// workspace is a folder of the person's (a project: not the engine's
// own, not a Space App's), and user cannot write it. A project that
// cannot be bound so refuses the run, saying why and what to do.
func (e *Engine) idmapWorkspace(sb *Sandbox, user *backends.Credential, backend string) (bool, error) {
	if user == nil || sb.OwnWorkspace || sb.Kind == KindApp || sb.Workspace == "" {
		return false, nil
	}
	err := jailfs.CanWrite(user, sb.Workspace)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, syscall.EROFS):
		return false, &RefusedError{Reason: fmt.Sprintf("the project folder %s is on a read-only file system, where no sandbox can write; give a folder on a writable one", sb.Workspace)}
	case !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EPERM):
		return false, err
	}
	why := e.noIDMap(backend)
	if why == "" {
		mapping, err := mappingOf(sb.Workspace, user)
		if err == nil {
			err = e.idmapCheck(sb.Workspace, mapping)
		}
		if err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		return false, &RefusedError{Reason: fmt.Sprintf("the sandbox user (uid %d) cannot write the project folder %s, and it cannot be made writable for it with an idmapped mount: %s. Let uid %d write the folder (or one on its way), or run senclaw as the folder's owner", user.UID, sb.Workspace, why, user.UID)}
	}
	return true, nil
}

// idmapCheck is Options.IDMapCheck, or the real one.
func (e *Engine) idmapCheck(dir string, m idmap.Mapping) error {
	if e.opts.IDMapCheck != nil {
		return e.opts.IDMapCheck(dir, m)
	}
	return idmap.Check(dir, m)
}

// noIDMap says why the backend named (or, for "", the one a run would
// most likely get: bwrap when it is offered) cannot bind a mount through
// an idmapped mount; "" when it can.
func (e *Engine) noIDMap(name string) string {
	if name == "" || name == "auto" {
		name = "bwrap"
		if e.probes.find(name) == nil {
			return "only the bwrap backend binds idmapped mounts, and this engine has none"
		}
	}
	b := e.probes.find(name)
	if b == nil {
		return "no backend " + strconv.Quote(name)
	}
	im, ok := b.(backends.IDMapper)
	if !ok {
		return "the " + name + " backend cannot bind idmapped mounts (bwrap can)"
	}
	if ok, why := im.IDMapsMounts(); !ok {
		return why
	}
	return ""
}

// idmapMounts returns mounts with those this run (as user) binds through
// an idmapped mount marked (a copy); a run on a backend that cannot is
// refused.
func (e *Engine) idmapMounts(mounts []backends.Mount, user *backends.Credential, backend string) ([]backends.Mount, error) {
	mounts = slices.Clone(mounts)
	for i, m := range mounts {
		need, err := e.needsIDMap(m, user)
		if err != nil {
			return nil, &RefusedError{Reason: fmt.Sprintf("the mount %s %v", m.Source, err)}
		}
		if !need {
			continue
		}
		if why := e.noIDMap(backend); why != "" && m.ReadOnly {
			return nil, &RefusedError{Reason: fmt.Sprintf("the sandbox user cannot reach the mount %s, and %s", m.Source, why)}
		}
		if why := e.noIDMap(backend); why != "" {
			return nil, &RefusedError{Reason: fmt.Sprintf("the sandbox user cannot write the mount %s, and %s", m.Source, why)}
		}
		mounts[i].IDMap = true
	}
	return mounts, nil
}

// idmapNote says which of sb's mounts are bound through an idmapped mount.
func (e *Engine) idmapNote(sb *Sandbox) string {
	user := e.checkUser(sb)
	note := ""
	for _, m := range sb.Mounts {
		need, err := e.needsIDMap(m, user)
		if err != nil || !need {
			continue
		}
		owner, err := mappingOf(m.Source, user)
		if err != nil {
			continue
		}
		if note != "" {
			note += "; "
		}
		if m.ReadOnly {
			note += fmt.Sprintf("%s is out of the sandbox user's reach (uid %d), so it is bound read-only through an idmapped mount: files there of uid %d read as the sandbox's", m.Source, user.UID, owner.OwnerUID)
			continue
		}
		note += fmt.Sprintf("%s is not writable for the sandbox user (uid %d), so it is bound through an idmapped mount: files there of uid %d are the sandbox's, what it writes belongs to uid %d, and it can make no setuid or setgid file", m.Source, user.UID, owner.OwnerUID, owner.OwnerUID)
	}
	if need, err := e.idmapWorkspace(sb, user, sb.Backend); err == nil && need {
		if owner, err := mappingOf(sb.Workspace, user); err == nil {
			if note != "" {
				note += "; "
			}
			note += fmt.Sprintf("the project folder %s is not writable for the sandbox user (uid %d), so it is bound through an idmapped mount: files there of uid %d are the sandbox's, what it writes belongs to uid %d, and it can make no setuid or setgid file", sb.Workspace, user.UID, owner.OwnerUID, owner.OwnerUID)
		}
	}
	return note
}
