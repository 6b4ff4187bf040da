//go:build unix

package main

import "syscall"

// detached starts the daemon in a session of its own, away from the
// terminal that started it.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
