package app

import (
	"io/fs"

	"golang.org/x/sys/windows"
)

func ownerOf(fs.FileInfo) (uid, gid uint32, ok bool) { return 0, 0, false }

func identityOf(fs.FileInfo) (ino, dev uint64) { return 0, 0 }

// DiskFree is the space the engine's user may still take on the volume
// of dir.
func DiskFree(dir string) (uint64, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &free, nil, nil); err != nil {
		return 0, err
	}
	return free, nil
}
