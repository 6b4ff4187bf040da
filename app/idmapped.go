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
// often cannot write a folder given read-write (root's 0755 /srv/www). Such
// a mount is bound through an idmapped mount (backends/idmap) where the
// kernel, the folder's file system and the backend can make one: its owner
// is the sandbox user there, and what the sandbox writes belongs to the
// owner. Where one cannot be made, the sandbox is refused when it is
// created, with the reason, rather than meeting "Permission denied" later.

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

// needsIDMap reports whether the read-write mount m needs an idmapped
// mount: the engine is root and its sandbox user cannot write the source.
// An error is a reason the sandbox can never write it (a read-only file
// system).
func (e *Engine) needsIDMap(m backends.Mount) (bool, error) {
	user := e.sandboxUser()
	if m.ReadOnly || user == nil {
		return false, nil
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
	for i, m := range sb.Mounts {
		field := "mounts[" + strconv.Itoa(i) + "].source"
		need, err := e.needsIDMap(m)
		if err != nil {
			return badField(field, m.Source, "%v", err)
		}
		if !need {
			continue
		}
		user := e.sandboxUser()
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
		if why != "" {
			return badField(field, m.Source, "the sandbox user (uid %d) cannot write it, and it cannot be made writable for it with an idmapped mount: %s. Give it read-only (SRC:TARGET:ro), or let uid %d write it", user.UID, why, user.UID)
		}
	}
	return nil
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

// idmapMounts returns mounts with those this run binds through an
// idmapped mount marked (a copy); a run on a backend that cannot is
// refused.
func (e *Engine) idmapMounts(mounts []backends.Mount, backend string) ([]backends.Mount, error) {
	mounts = slices.Clone(mounts)
	for i, m := range mounts {
		need, err := e.needsIDMap(m)
		if err != nil {
			return nil, &RefusedError{Reason: fmt.Sprintf("the mount %s %v", m.Source, err)}
		}
		if !need {
			continue
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
	user := e.sandboxUser()
	note := ""
	for _, m := range sb.Mounts {
		need, err := e.needsIDMap(m)
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
		note += fmt.Sprintf("%s is not writable for the sandbox user (uid %d), so it is bound through an idmapped mount: files there of uid %d are the sandbox's, what it writes belongs to uid %d, and it can make no setuid or setgid file", m.Source, user.UID, owner.OwnerUID, owner.OwnerUID)
	}
	return note
}
