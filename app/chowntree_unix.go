//go:build unix

package app

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/senclaw/sandbox/backends"
)

// chownTree gives what from owns in the tree dir to to, through an
// os.Root of dir, changing links themselves and never following one: a
// link planted in the tree cannot lead the change elsewhere. A file with
// more than one name is left as it is: it may be a host file the sandbox
// linked into its workspace. It returns how many entries changed and how
// many were left for that reason.
func chownTree(dir string, from, to backends.Credential) (changed, skipped int, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, 0, err
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := root.Lstat(path)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		uid, gid := -1, -1
		if st.Uid == from.UID {
			uid = int(to.UID)
		}
		if st.Gid == from.GID {
			gid = int(to.GID)
		}
		if uid == -1 && gid == -1 {
			return nil
		}
		if !fi.IsDir() && st.Nlink > 1 {
			skipped++
			return nil
		}
		if err := root.Lchown(path, uid, gid); err != nil {
			return err
		}
		changed++
		return nil
	})
	return changed, skipped, err
}
