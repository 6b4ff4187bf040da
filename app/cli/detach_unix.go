//go:build unix

package cli

import "syscall"

// detached starts the daemon in a session of its own, away from the
// terminal that started it.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
