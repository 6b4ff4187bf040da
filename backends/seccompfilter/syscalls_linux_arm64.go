package seccompfilter

import "golang.org/x/sys/unix"

// auditArch is the native architecture's AUDIT_ARCH value, what the kernel
// puts in seccomp_data.arch for a system call made through the native ABI.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32SyscallBit is set in the number of a system call made through the x32
// ABI, which shares x86_64's AUDIT_ARCH value; 0 where there is no such ABI.
const x32SyscallBit = 0

// time64Calls is where the generic table's 32-bit time64 calls start
// (mq_timedsend_time64 is 418). The arm64 kernel leaves those numbers
// unused (ENOSYS) and x/sys/unix has no names for them, but
// go-seccomp-bpf's table names them, as the filter then does.
const time64Calls = 416

// archSyscallNumber is syscallNumber for the names that not every
// architecture has.
func archSyscallNumber(name string) (uint32, bool) {
	switch name {
	case "kexec_file_load":
		return unix.SYS_KEXEC_FILE_LOAD, true
	case "mq_timedreceive_time64":
		return time64Calls + 3, true
	case "mq_timedsend_time64":
		return time64Calls + 2, true
	case "semop":
		return unix.SYS_SEMOP, true
	case "semtimedop":
		return unix.SYS_SEMTIMEDOP, true
	case "semtimedop_time64":
		return time64Calls + 4, true
	}
	return 0, false
}
