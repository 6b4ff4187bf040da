//go:build unix && !linux

package jailfs

import "golang.org/x/sys/unix"

// pathFlag opens a directory to walk through it (there is no O_PATH).
const pathFlag = unix.O_RDONLY

// openBeneath opens name beneath dirfd without following any link, one
// component at a time.
func openBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
	return walkBeneath(dirfd, name, flags, mode)
}
