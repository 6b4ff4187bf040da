package bwrap

import (
	"math"

	"golang.org/x/sys/unix"
	"os"
	"strconv"
	"syscall"
)

// closeOnExecInherited marks every open descriptor above 2 close-on-exec.
// Go opens its own descriptors with O_CLOEXEC, but descriptors the engine
// inherited without it (from a shell, a job runner, a service manager)
// would otherwise reach bwrap and, since bwrap closes only its own fds,
// the sandboxed command. ExtraFiles are unaffected: exec dup2s them into
// place without the flag.
func closeOnExecInherited() error {
	// One syscall on Linux 5.11 and later; the /proc scan below otherwise.
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The descriptor of the /proc/self/fd listing itself is already
		// closed; EBADF is fine for it.
		syscall.CloseOnExec(fd)
	}
	return nil
}
