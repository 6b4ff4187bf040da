package unixguard

import "golang.org/x/sys/unix"

const (
	// archSupported: the filter knows this architecture.
	archSupported = true
	// auditArch is the native system call ABI's AUDIT_ARCH value.
	auditArch = unix.AUDIT_ARCH_AARCH64
	// x32Bit marks a second ABI sharing the audit arch; arm64 has none.
	x32Bit = 0
)
