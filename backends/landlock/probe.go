// Package landlock probes the Linux Landlock LSM. For now it only answers
// which Landlock ABI the kernel offers; a Landlock backend will come later.
package landlock

import (
	"fmt"
	"strconv"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Name is the backend name used in Capability.Backend.
const Name = "landlock"

// Probe reports whether Landlock is available and its ABI version: healthy
// with "ABI N", or never seen with the reason.
func Probe() backends.Capability {
	c := backends.Capability{Backend: Name, State: backends.NeverSeen, Isolates: true, CheckedAt: time.Now()}
	abi, err := ABIVersion()
	if err != nil {
		c.Reason = err.Error()
		return c
	}
	c.State = backends.Healthy
	c.Version = fmt.Sprintf("ABI %d", abi)
	c.Reason = fmt.Sprintf("Landlock ABI %d is available", abi)
	c.Details = map[string]string{"abi": strconv.Itoa(abi)}
	c.Enforces = enforces(abi)
	return c
}

// enforces lists what a Landlock ABI can restrict: file access from ABI 1,
// TCP bind and connect ports from ABI 4.
func enforces(abi int) []string {
	e := []string{"fs"}
	if abi >= 4 {
		e = append(e, "ports")
	}
	return e
}
