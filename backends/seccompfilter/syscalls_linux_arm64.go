package seccompfilter

import "golang.org/x/sys/unix"

// auditArch is the native architecture's AUDIT_ARCH value, what the kernel
// puts in seccomp_data.arch for a system call made through the native ABI.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32SyscallBit is set in the number of a system call made through the x32
// ABI, which shares x86_64's AUDIT_ARCH value; 0 where there is no such ABI.
const x32SyscallBit = 0

// archSyscallNumber is syscallNumber for the names that not every
// architecture has.
func archSyscallNumber(name string) (uint32, bool) {
	switch name {
	case "kexec_file_load":
		return unix.SYS_KEXEC_FILE_LOAD, true
	}
	return 0, false
}
