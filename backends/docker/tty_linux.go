package docker

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/internal/rawterm"
)

// relayTerminal prepares the engine's terminal (Spec.Terminal) to relay
// a container's: the Docker daemon makes the terminal the command sees,
// so this one passes bytes both ways untouched (raw: no echo, no line
// editing, no signals, no output processing: the container's terminal
// does all of that once). It returns a non-blocking copy (the caller's
// own is closed once the run started) and the terminal's size.
func relayTerminal(t *os.File) (_ *os.File, cols, rows uint, err error) {
	// Close-on-exec from the start: a dup marked after it was made is,
	// for that moment, inherited by whatever the engine starts at the
	// same time (another run's bwrap keeps what it inherits).
	fd, err := unix.FcntlInt(t.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("passing the terminal: %w", err)
	}
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err == nil {
		rawterm.Make(tio)
		err = unix.IoctlSetTermios(fd, unix.TCSETS, tio)
	}
	if err != nil {
		unix.Close(fd)
		return nil, 0, 0, fmt.Errorf("setting the terminal raw: %w", err)
	}
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		unix.Close(fd)
		return nil, 0, 0, fmt.Errorf("reading the terminal's size: %w", err)
	}
	// Non-blocking, so that the poller serves it and Close ends a read.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, 0, 0, err
	}
	return os.NewFile(uintptr(fd), "terminal"), uint(ws.Col), uint(ws.Row), nil
}

// GivesTerminals reports that Start honours Spec.Terminal: the run gets
// a terminal made by the Docker daemon (docker exec -it), which the
// engine's relays.
func (b *Backend) GivesTerminals() bool { return true }
