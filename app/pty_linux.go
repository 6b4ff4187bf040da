package app

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openTerminal opens a new pseudo-terminal of cols x rows and returns its
// master (kept by the engine, non-blocking so that closing it ends a
// pending read) and its slave (given to the run). The slave is opened from
// the master itself (TIOCGPTPEER), never by its /dev/pts path, so no other
// process can slip a terminal of its own in between.
func openTerminal(cols, rows uint16) (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening a terminal: %w", err)
	}
	master = os.NewFile(uintptr(mfd), "ptmx")
	fail := func(what string, err error) (*os.File, *os.File, error) {
		master.Close()
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlocking the terminal", err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		return fail("opening the terminal's other side", errno)
	}
	slave = os.NewFile(sfd, "pts")
	if err := resizeTerminal(master, cols, rows); err != nil {
		slave.Close()
		return fail("setting the terminal's size", err)
	}
	return master, slave, nil
}

// resizeTerminal sets the size of the terminal behind master; the kernel
// tells the terminal's foreground process group (SIGWINCH).
func resizeTerminal(master *os.File, cols, rows uint16) error {
	raw, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	err = raw.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	})
	if err != nil {
		return err
	}
	return ierr
}

// terminalsHere reports whether this engine can open terminals.
const terminalsHere = true
