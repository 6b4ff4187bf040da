package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends/diskquota"
)

// makePoolDir makes the empty workspace of a pooled container, owned by
// the user the container runs as when the engine is root (as the engine
// does for its own workspaces).
func makePoolDir(dir, user string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return fmt.Errorf("making the one-shot pool directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("making a pooled workspace: %w", err)
	}
	if os.Getuid() == 0 {
		uid, gid, ok := parseUser(user)
		if ok {
			if err := os.Lchown(dir, uid, gid); err != nil {
				return fmt.Errorf("giving a pooled workspace to the sandbox user: %w", err)
			}
		}
	}
	return nil
}

func parseUser(user string) (uid, gid int, ok bool) {
	u, g, found := strings.Cut(user, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	return uid, gid, found && err1 == nil && err2 == nil
}

// adoptWorkspace makes the pooled directory dir, bound at /work in its
// container, become the run's workspace ws: ws's files move into dir, dir
// takes ws's mode and owner, and dir is renamed onto the then empty ws.
// On failure everything is moved back and ws is as it was. When dir is a
// filesystem of its own (a tmpfs of the quota, HardQuota), it is bound
// over ws instead, and bind says so: it is the caller's to remove after
// the run.
func adoptWorkspace(dir, ws string) (bind bool, err error) {
	fi, err := os.Lstat(ws)
	if err != nil {
		return false, fmt.Errorf("reading the run's workspace: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("the run's workspace %s is not a directory", ws)
	}
	switch {
	case diskquota.Mounted(dir):
		return true, bindWorkspace(dir, ws, fi)
	case diskquota.Mounted(ws):
		return false, fmt.Errorf("the run's workspace %s is a filesystem of its own, and the pooled one is not", ws)
	}
	return false, renameWorkspace(dir, ws, fi)
}

// bindWorkspace moves ws's files (and the filesystem the engine gave it:
// the pooled one replaces it) into dir and binds dir over ws.
func bindWorkspace(dir, ws string, fi os.FileInfo) error {
	if err := diskquota.Move(ws, dir); err != nil {
		return fmt.Errorf("moving the workspace's files into the pooled container's: %w", err)
	}
	err := setLike(dir, fi)
	if err == nil {
		err = diskquota.Unmount(ws)
	}
	if err == nil {
		err = diskquota.Bind(dir, ws)
	}
	if err != nil {
		// The run goes to a fresh container: its files go back.
		if merr := diskquota.Move(dir, ws); merr != nil {
			return fmt.Errorf("%w; and moving the workspace's files back failed: %v", err, merr)
		}
	}
	return err
}

// setLike gives dir fi's mode and owner.
func setLike(dir string, fi os.FileInfo) error {
	if err := os.Chmod(dir, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("setting the pooled workspace's mode: %w", err)
	}
	if uid, gid, ok := ownerOf(fi); ok {
		if err := os.Lchown(dir, uid, gid); err != nil && !errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("setting the pooled workspace's owner: %w", err)
		}
	}
	return nil
}

// renameWorkspace moves ws's files into dir and renames dir onto ws.
func renameWorkspace(dir, ws string, fi os.FileInfo) (err error) {
	entries, err := os.ReadDir(ws)
	if err != nil {
		return fmt.Errorf("reading the run's workspace: %w", err)
	}
	var moved []string
	defer func() {
		if err != nil {
			for _, name := range moved {
				_ = os.Rename(filepath.Join(dir, name), filepath.Join(ws, name))
			}
		}
	}()
	for _, e := range entries {
		if err := os.Rename(filepath.Join(ws, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("moving the workspace's files into the pooled container's directory (it must be on the same filesystem as the workspaces): %w", err)
		}
		moved = append(moved, e.Name())
	}
	if err := setLike(dir, fi); err != nil {
		return err
	}
	if err := replaceDir(dir, ws); err != nil {
		return fmt.Errorf("putting the pooled workspace in place: %w", err)
	}
	return nil
}
