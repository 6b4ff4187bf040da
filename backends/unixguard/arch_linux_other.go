//go:build linux && !amd64 && !arm64

package unixguard

// The guard is not built for this architecture (some of them reach
// connect through socketcall too): Probe says so, Install refuses.
const (
	archSupported = false
	auditArch     = 0
	x32Bit        = 0
)
