package seccompfilter

import "golang.org/x/sys/unix"

// auditArch is the native architecture's AUDIT_ARCH value, what the kernel
// puts in seccomp_data.arch for a system call made through the native ABI.
const auditArch = unix.AUDIT_ARCH_X86_64

// x32SyscallBit is set in the number of a system call made through the x32
// ABI, which shares x86_64's AUDIT_ARCH value; 0 where there is no such ABI.
const x32SyscallBit = 0x40000000

// archSyscallNumber is syscallNumber for the names that not every
// architecture has.
func archSyscallNumber(name string) (uint32, bool) {
	switch name {
	case "chmod":
		return unix.SYS_CHMOD, true
	case "creat":
		return unix.SYS_CREAT, true
	case "ioperm":
		return unix.SYS_IOPERM, true
	case "iopl":
		return unix.SYS_IOPL, true
	case "kexec_file_load":
		return unix.SYS_KEXEC_FILE_LOAD, true
	case "mknod":
		return unix.SYS_MKNOD, true
	case "open":
		return unix.SYS_OPEN, true
	case "semop":
		return unix.SYS_SEMOP, true
	case "semtimedop":
		return unix.SYS_SEMTIMEDOP, true
	case "uselib":
		return unix.SYS_USELIB, true
	}
	return 0, false
}
