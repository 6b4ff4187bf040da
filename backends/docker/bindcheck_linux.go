package docker

import (
	"fmt"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// The Docker daemon binds a container's mounts by path as it starts it,
// following links, a moment after checkMountSources looked at them: code
// that may write above a source (another sandbox with its parent
// read-write) can swap it for a link in between, again and again until
// a start falls in the gap. So the sources are taken as they are checked
// (boundIDs: the directory each path leads to, with no link on the way,
// held by descriptor), and once the container is started, before any of
// the sandbox's code runs in it, each bind is looked at from inside the
// container (checkBinds): it must be that very directory.

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

// bindID is one bind of a container and what it must show.
type bindID struct {
	what, source, target string
	id                   fileID
}

// boundIDs takes the identity of each bind's source that
// checkMountSources checks, refusing one whose path now goes through a
// link.
func boundIDs(s shape) ([]bindID, error) {
	var out []bindID
	add := func(what, source, target string) error {
		fd, err := unix.Open(source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("refused: %s %s cannot be found (%v); check that it still exists", what, source, err)
		}
		defer unix.Close(fd)
		real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil {
			return fmt.Errorf("refused: checking %s %s: %v", what, source, err)
		}
		if real != source {
			return fmt.Errorf("refused: %s %s now leads to %s (a symlink was put in its path since it was checked); the container was not made. Remove the symlink, or give the directory again", what, source, real)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("refused: checking %s %s: %v", what, source, err)
		}
		out = append(out, bindID{what: what, source: source, target: target, id: fileID{st.Dev, st.Ino}})
		return nil
	}
	if s.WorkspaceExact {
		if err := add("the workspace", s.Workspace, workDir); err != nil {
			return nil, err
		}
	}
	for _, m := range s.Mounts {
		if err := add("the mount source", m.Source, path.Join(workDir, m.Target)); err != nil {
			return nil, err
		}
	}
	for _, p := range s.Protected {
		if err := add("the read-only agents' or git's file", p.Source, p.Target); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkBinds looks, from the root of the container whose first process
// is initPid, at each bind's target, resolved as the daemon resolves it
// (inside the container's root): what is there must be the source taken.
func checkBinds(initPid int, binds []bindID) error {
	if len(binds) == 0 {
		return nil
	}
	root, err := unix.Open("/proc/"+strconv.Itoa(initPid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("refused: the container's binds cannot be checked (%v); it was removed", err)
	}
	defer unix.Close(root)
	for _, b := range binds {
		fd, err := unix.Openat2(root, b.target, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return fmt.Errorf("refused: %s %s is not at %s in the container (%v); it was removed", b.what, b.source, b.target, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil || (fileID{st.Dev, st.Ino}) != b.id {
			return fmt.Errorf("refused: %s %s was swapped for something else (a link put in its path) while the container started, and the Docker daemon bound that; the container was removed and nothing ran in it. Remove the link, or give the directory again", b.what, b.source)
		}
	}
	return nil
}
