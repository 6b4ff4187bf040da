//go:build !linux

package unixguard

import (
	"time"

	"github.com/senclaw/sandbox/backends"
)

const onlyLinux = "the Unix socket guard exists for Linux sandboxes only"

// Available reports whether this kernel can run the guard: never here.
func Available() (bool, string) { return false, onlyLinux }

// Probe says that the guard does not exist on this system.
func Probe() backends.Capability {
	return backends.Capability{Backend: Name, State: backends.NeverSeen, Isolates: true, Reason: onlyLinux, CheckedAt: time.Now()}
}
