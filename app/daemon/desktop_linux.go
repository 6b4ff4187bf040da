//go:build linux

package daemon

import "syscall"

// windowProcAttr makes the window process end with the app's main
// process, however that ends.
func windowProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
