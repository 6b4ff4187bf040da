package seccompfilter

import "golang.org/x/sys/unix"

// auditArch is the native architecture's AUDIT_ARCH value, what the kernel
// puts in seccomp_data.arch for a system call made through the native ABI.
const auditArch = unix.AUDIT_ARCH_I386

// x32SyscallBit is set in the number of a system call made through the x32
// ABI, which shares x86_64's AUDIT_ARCH value; 0 where there is no such ABI.
const x32SyscallBit = 0

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
	case "ipc":
		return unix.SYS_IPC, true
	case "mknod":
		return unix.SYS_MKNOD, true
	case "mq_timedreceive_time64":
		return unix.SYS_MQ_TIMEDRECEIVE_TIME64, true
	case "mq_timedsend_time64":
		return unix.SYS_MQ_TIMEDSEND_TIME64, true
	case "open":
		return unix.SYS_OPEN, true
	case "semtimedop_time64":
		return unix.SYS_SEMTIMEDOP_TIME64, true
	case "socketcall":
		return unix.SYS_SOCKETCALL, true
	case "uselib":
		return unix.SYS_USELIB, true
	}
	return 0, false
}
