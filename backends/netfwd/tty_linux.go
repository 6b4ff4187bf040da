package netfwd

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"

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

// execCommand replaces this process with argv: with a terminal and
// nothing to forward, the helper leaves no process of its own behind, so
// the command is the session's leader and gets the signals sent to it.
func execCommand(argv []string, stderr io.Writer) int {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "senclaw-netfwd: %s: command not found\n", argv[0])
		return 127
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(stderr, "senclaw-netfwd: %s: %v\n", argv[0], err)
	return 126
}
