package netfwd

import (
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// takeTerminal makes the terminal open on fd the controlling terminal of
// a new session led by this process, and each of the standard
// descriptors std. bwrap runs the command in its init's session, so the
// command (or this helper) is not a session leader yet: setsid makes it
// one. TIOCSTI stays refused by the sandbox's seccomp filter whatever
// the terminal.
func takeTerminal(fd int, std []int) error {
	if _, err := unix.Setsid(); err != nil {
		return fmt.Errorf("setsid: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.TIOCSCTTY, 0); err != nil {
		return fmt.Errorf("making it the controlling terminal: %w", err)
	}
	for _, s := range std {
		if err := unix.Dup3(fd, s, 0); err != nil {
			return fmt.Errorf("dup3 onto %d: %w", s, err)
		}
	}
	if !slices.Contains(std, fd) {
		unix.Close(fd)
	}
	return nil
}

// terminalFD is a standard descriptor that is the terminal, for the
// child's tcsetpgrp: 0, 1 or 2, whichever is one.
func terminalFD() int {
	for fd := 0; fd <= 2; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			return fd
		}
	}
	return 0
}
