//go:build desktop && !linux

package daemon

import "syscall"

// windowProcAttr: outside Linux there is no parent-death signal; the app
// stops its window itself when it quits.
func windowProcAttr() *syscall.SysProcAttr { return nil }
