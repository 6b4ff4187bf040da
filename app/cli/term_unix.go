//go:build linux || darwin

package cli

import (
	"bufio"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/internal/rawterm"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// terminalSize is f's size in columns and rows (0, 0 if unknown).
func terminalSize(f *os.File) (uint16, uint16) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return ws.Col, ws.Row
}

// makeRaw puts the terminal f in raw mode, as ssh -t and docker exec -t
// do: every key goes to the terminal inside, whose line discipline turns
// ^C into SIGINT for the command there. It returns what restores it.
func makeRaw(f *os.File) (func(), error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	raw := *old
	rawterm.Make(&raw)
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &raw); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, nil
}

// forwardedSignals are the signals passed on to the command, by name.
var forwardedSignals = map[os.Signal]string{
	syscall.SIGINT: "INT", syscall.SIGTERM: "TERM", syscall.SIGHUP: "HUP", syscall.SIGQUIT: "QUIT",
}

// resizeSignal is the signal of a terminal's size change.
var resizeSignal os.Signal = syscall.SIGWINCH

// dieBy ends this process by sig, as the command it ran ended, so that
// whoever waits for it sees the same death (a shell's loop stops on ^C).
func dieBy(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	signal.Reset(s)
	_ = syscall.Kill(os.Getpid(), s)
	time.Sleep(200 * time.Millisecond) // the signal is on its way
}

func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return -1
}

// readHidden reads one line from the terminal f without echoing it.
func readHidden(f *os.File) ([]byte, error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet); err != nil {
		return nil, err
	}
	defer unix.IoctlSetTermios(fd, ioctlSetTermios, old)
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return nil, err
	}
	return []byte(line), nil
}
