//go:build !unix

package docker

import "os"

// ownerOf has no uid and gid to give on this system.
func ownerOf(os.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

// replaceDir renames dir onto the empty directory target (not atomic here).
func replaceDir(dir, target string) error {
	if err := os.Remove(target); err != nil {
		return err
	}
	return os.Rename(dir, target)
}
