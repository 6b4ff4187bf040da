//go:build unix

package monitor

import "golang.org/x/sys/unix"

// processGroup returns pid's process group, 0 when it cannot be read.
func processGroup(pid int) int {
	pgid, err := unix.Getpgid(pid)
	if err != nil {
		return 0
	}
	return pgid
}
