//go:build !linux

package docker

import (
	"errors"
	"syscall"
)

// The daemon of a non-Linux engine runs in a VM (Docker Desktop): its pids
// are never this machine's, so runs are killed from inside the container.

func sharesHostPids(int, string) bool { return false }

func sweepHost(int, string, int) error {
	return errors.New("host pids are not visible on this system")
}

func treePids(int, int, string) []int { return nil }

func nsPid(int) int { return 0 }

func signalHostPid(int, string) error {
	return errors.New("host pids are not visible on this system")
}

func runPids(int, string) []int { return nil }

func signalHostTree(int, int, string, syscall.Signal) error {
	return errors.New("host pids are not visible on this system")
}
