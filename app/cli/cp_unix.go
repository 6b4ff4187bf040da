//go:build unix

package cli

import "syscall"

// noFollow opens the last component of a name without following it, and
// a FIFO without waiting for its other end.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
