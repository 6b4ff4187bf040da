//go:build linux && (amd64 || arm64 || 386 || arm)

package seccompfilter

import "golang.org/x/sys/unix"

// nativeTable says that this architecture has a system call table.
const nativeTable = true

// syscallNumber returns the number of the system call name on the native
// architecture, for the names the rules use (and socket, which the
// InetStreamOnly checks use): the numbers are x/sys/unix's for the GOARCH
// this is compiled for, so no table is built when the program starts. A
// name the architecture does not have is not found; so is a name no rule
// uses (TestSyscallTable holds the names to the rules).
func syscallNumber(name string) (uint32, bool) {
	switch name {
	case "acct":
		return unix.SYS_ACCT, true
	case "add_key":
		return unix.SYS_ADD_KEY, true
	case "adjtimex":
		return unix.SYS_ADJTIMEX, true
	case "bind":
		return unix.SYS_BIND, true
	case "bpf":
		return unix.SYS_BPF, true
	case "chroot":
		return unix.SYS_CHROOT, true
	case "clock_adjtime":
		return unix.SYS_CLOCK_ADJTIME, true
	case "clock_settime":
		return unix.SYS_CLOCK_SETTIME, true
	case "clone":
		return unix.SYS_CLONE, true
	case "clone3":
		return unix.SYS_CLONE3, true
	case "delete_module":
		return unix.SYS_DELETE_MODULE, true
	case "fchmod":
		return unix.SYS_FCHMOD, true
	case "fchmodat":
		return unix.SYS_FCHMODAT, true
	case "fchmodat2":
		return unix.SYS_FCHMODAT2, true
	case "finit_module":
		return unix.SYS_FINIT_MODULE, true
	case "fsconfig":
		return unix.SYS_FSCONFIG, true
	case "fsmount":
		return unix.SYS_FSMOUNT, true
	case "fsopen":
		return unix.SYS_FSOPEN, true
	case "fspick":
		return unix.SYS_FSPICK, true
	case "init_module":
		return unix.SYS_INIT_MODULE, true
	case "io_uring_enter":
		return unix.SYS_IO_URING_ENTER, true
	case "io_uring_register":
		return unix.SYS_IO_URING_REGISTER, true
	case "io_uring_setup":
		return unix.SYS_IO_URING_SETUP, true
	case "ioctl":
		return unix.SYS_IOCTL, true
	case "ioprio_set":
		return unix.SYS_IOPRIO_SET, true
	case "kexec_load":
		return unix.SYS_KEXEC_LOAD, true
	case "keyctl":
		return unix.SYS_KEYCTL, true
	case "listen":
		return unix.SYS_LISTEN, true
	case "lookup_dcookie":
		return unix.SYS_LOOKUP_DCOOKIE, true
	case "mknodat":
		return unix.SYS_MKNODAT, true
	case "mount":
		return unix.SYS_MOUNT, true
	case "mount_setattr":
		return unix.SYS_MOUNT_SETATTR, true
	case "move_mount":
		return unix.SYS_MOVE_MOUNT, true
	case "mq_getsetattr":
		return unix.SYS_MQ_GETSETATTR, true
	case "mq_notify":
		return unix.SYS_MQ_NOTIFY, true
	case "mq_open":
		return unix.SYS_MQ_OPEN, true
	case "mq_timedreceive":
		return unix.SYS_MQ_TIMEDRECEIVE, true
	case "mq_timedsend":
		return unix.SYS_MQ_TIMEDSEND, true
	case "mq_unlink":
		return unix.SYS_MQ_UNLINK, true
	case "msgctl":
		return unix.SYS_MSGCTL, true
	case "msgget":
		return unix.SYS_MSGGET, true
	case "msgrcv":
		return unix.SYS_MSGRCV, true
	case "msgsnd":
		return unix.SYS_MSGSND, true
	case "name_to_handle_at":
		return unix.SYS_NAME_TO_HANDLE_AT, true
	case "open_by_handle_at":
		return unix.SYS_OPEN_BY_HANDLE_AT, true
	case "open_tree":
		return unix.SYS_OPEN_TREE, true
	case "openat":
		return unix.SYS_OPENAT, true
	case "openat2":
		return unix.SYS_OPENAT2, true
	case "perf_event_open":
		return unix.SYS_PERF_EVENT_OPEN, true
	case "pivot_root":
		return unix.SYS_PIVOT_ROOT, true
	case "prlimit64":
		return unix.SYS_PRLIMIT64, true
	case "process_vm_readv":
		return unix.SYS_PROCESS_VM_READV, true
	case "process_vm_writev":
		return unix.SYS_PROCESS_VM_WRITEV, true
	case "ptrace":
		return unix.SYS_PTRACE, true
	case "quotactl":
		return unix.SYS_QUOTACTL, true
	case "quotactl_fd":
		return unix.SYS_QUOTACTL_FD, true
	case "reboot":
		return unix.SYS_REBOOT, true
	case "request_key":
		return unix.SYS_REQUEST_KEY, true
	case "sched_setattr":
		return unix.SYS_SCHED_SETATTR, true
	case "sched_setparam":
		return unix.SYS_SCHED_SETPARAM, true
	case "sched_setscheduler":
		return unix.SYS_SCHED_SETSCHEDULER, true
	case "semctl":
		return unix.SYS_SEMCTL, true
	case "semget":
		return unix.SYS_SEMGET, true
	case "sendmmsg":
		return unix.SYS_SENDMMSG, true
	case "sendmsg":
		return unix.SYS_SENDMSG, true
	case "sendto":
		return unix.SYS_SENDTO, true
	case "setns":
		return unix.SYS_SETNS, true
	case "setpriority":
		return unix.SYS_SETPRIORITY, true
	case "settimeofday":
		return unix.SYS_SETTIMEOFDAY, true
	case "shmat":
		return unix.SYS_SHMAT, true
	case "shmctl":
		return unix.SYS_SHMCTL, true
	case "shmdt":
		return unix.SYS_SHMDT, true
	case "shmget":
		return unix.SYS_SHMGET, true
	case "socket":
		return unix.SYS_SOCKET, true
	case "socketpair":
		return unix.SYS_SOCKETPAIR, true
	case "swapoff":
		return unix.SYS_SWAPOFF, true
	case "swapon":
		return unix.SYS_SWAPON, true
	case "syslog":
		return unix.SYS_SYSLOG, true
	case "umount2":
		return unix.SYS_UMOUNT2, true
	case "unshare":
		return unix.SYS_UNSHARE, true
	case "userfaultfd":
		return unix.SYS_USERFAULTFD, true
	case "vhangup":
		return unix.SYS_VHANGUP, true
	}
	return archSyscallNumber(name)
}
