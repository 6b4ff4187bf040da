//go:build unix && !linux

package direct

import "syscall"

// setDeathSignal: there is no parent-death signal outside Linux; the
// engine kills its process groups when it stops.
func setDeathSignal(*syscall.SysProcAttr) {}
