//go:build linux || darwin

// Package rawterm holds the one raw mode of a terminal, as cfmakeraw(3)
// makes it.
//
// The CLI's own terminal (senclaw shell) and the engine's relay of a
// container's (the Docker backend) use it: every byte passes untouched, with
// no echo, no line editing, no signal keys and no output processing, which
// the terminal at the far end does once.
package rawterm

import "golang.org/x/sys/unix"

// Make turns t into raw mode in place.
func Make(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
}
