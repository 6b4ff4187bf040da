package unixguard

import "golang.org/x/sys/unix"

const (
	// archSupported: the filter knows this architecture.
	archSupported = true
	// auditArch is the native system call ABI's AUDIT_ARCH value.
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's system call numbers, which share the
	// x86_64 audit arch: the filter fails them (0: no such ABI).
	x32Bit = 0x40000000
)
