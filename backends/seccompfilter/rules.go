// Package seccompfilter builds the seccomp BPF program that SenClaw's
// sandboxes run under.
//
// Everything is allowed except a list of system calls that let a process
// escape or attack the host (namespaces, mounts, kernel modules, ptrace,
// keyrings, io_uring, terminal injection, ...).
//
// The deny list is data (Rules) so that other backends can reuse it, for
// example to extend Docker's default profile. Program assembles it for the
// native architecture (linux on amd64, arm64, 386 or arm, with the system
// call numbers of golang.org/x/sys/unix) with golang.org/x/net/bpf, behind a
// guard that kills any process using a foreign system call ABI (i386
// through int 0x80 on x86_64, arm32 on arm64) and fails the x32 ABI's calls
// with ENOSYS, so the list cannot be bypassed with another ABI's numbers.
//
// ProgramFor builds variants: the Landlock backend, which has no network
// or IPC namespace, adds an allow-list of sockets (TCP of the inet
// families only, and Unix stream and seqpacket pairs), refuses System V
// IPC and POSIX message queues, and may refuse listen(2) and bind(2).
package seccompfilter

// Linux errno values returned by denied system calls. They are Linux numbers
// on every architecture the filter supports, independent of the host OS that
// builds the program.
const (
	// EPERM is "operation not permitted".
	EPERM Errno = 1
	// ENOSYS is "function not implemented"; libc falls back to an older call.
	ENOSYS Errno = 38
	// EACCES is "permission denied", what Landlock answers too.
	EACCES Errno = 13
)

// Errno is a Linux errno number returned by a denied system call.
type Errno uint16

// MatchOp says how an argument is compared.
type MatchOp string

const (
	// MatchAnyBit matches when the argument has any bit of Value set.
	// For Docker, expand it to one SCMP_CMP_MASKED_EQ rule per bit
	// (value=bit, valueTwo=bit).
	MatchAnyBit MatchOp = "any-bit"
	// MatchLow32 matches when the low 32 bits of the argument equal Value.
	// The kernel truncates such arguments (ioctl's request is an unsigned
	// int), so comparing all 64 bits could be bypassed by setting the high
	// half. For Docker: SCMP_CMP_MASKED_EQ value=0xffffffff valueTwo=Value.
	MatchLow32 MatchOp = "low-32"
)

// ArgMatch narrows a rule to calls whose argument Index matches.
type ArgMatch struct {
	Index uint32
	Op    MatchOp
	Value uint64
}

// Rule denies one system call, or one form of it when Arg is set.
// Several rules for the same system call are alternatives (any may match).
type Rule struct {
	Syscall string
	Errno   Errno
	Arg     *ArgMatch
	// Why says in words what the rule prevents.
	Why string
}

// Flags of clone(2) and unshare(2) that create namespaces.
const (
	cloneNewTime   = 0x00000080
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000

	// cloneNewAll is every CLONE_NEW* flag that clone(2) accepts. It leaves
	// out CLONE_NEWTIME, whose bit is part of the exit signal byte in
	// clone(2)'s flags.
	cloneNewAll = cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC |
		cloneNewUser | cloneNewPID | cloneNewNet

	// ioctl requests that inject input into or reconfigure a terminal.
	tiocsti   = 0x5412
	tioclinux = 0x541c
)

// hostIPCCalls are the system calls of System V IPC and POSIX message
// queues, on every architecture the filter supports: an architecture
// lacks some (i386 has no semop but the ipc(2) multiplexer; the 64-bit
// ones have no _time64 calls), and the program leaves those out.
var hostIPCCalls = []string{
	"shmget", "shmat", "shmctl", "shmdt",
	"msgget", "msgsnd", "msgrcv", "msgctl",
	"semget", "semop", "semtimedop", "semtimedop_time64", "semctl",
	"ipc",
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedsend_time64",
	"mq_timedreceive", "mq_timedreceive_time64", "mq_notify", "mq_getsetattr",
}

// msgFastOpen is sendto's and sendmsg's flag that connects as it sends.
const msgFastOpen = 0x20000000

// setIDBits are S_ISUID and S_ISGID of a file mode.
const setIDBits = 0o6000

// RulesFor returns the deny list of the variant o: Rules, and for
// InetStreamOnly what the socket checks of InstructionsFor do not cover.
func RulesFor(o Options) []Rule {
	rules := Rules()
	if o.InetStreamOnly {
		for _, call := range []struct {
			name string
			arg  uint32
		}{{"sendto", 3}, {"sendmsg", 2}, {"sendmmsg", 3}} {
			rules = append(rules, Rule{Syscall: call.name, Errno: EACCES,
				Why: "TCP Fast Open connects inside a send, where a connect rule may not look",
				Arg: &ArgMatch{Index: call.arg, Op: MatchAnyBit, Value: msgFastOpen}})
		}
		rules = append(rules, Rule{Syscall: "socketcall", Errno: ENOSYS,
			Why: "socketcall hides socket(2)'s arguments in memory; libc falls back to socket"})
	}
	if o.OwnProcessOnly {
		const why = "changing another process of this machine (its limits, priority or scheduling): a same-user process needs no ptrace check for it"
		anyPid := func(call string, arg uint32, bits uint64) Rule {
			return Rule{Syscall: call, Errno: EPERM, Why: why, Arg: &ArgMatch{Index: arg, Op: MatchAnyBit, Value: bits}}
		}
		rules = append(rules,
			anyPid("prlimit64", 0, 0xffffffff),
			anyPid("sched_setscheduler", 0, 0xffffffff),
			anyPid("sched_setparam", 0, 0xffffffff),
			anyPid("sched_setattr", 0, 0xffffffff),
			// which: PRIO_PGRP or PRIO_USER (all of the user's processes).
			anyPid("setpriority", 0, 0x3),
			anyPid("setpriority", 1, 0xffffffff),
			// which: IOPRIO_WHO_PGRP or IOPRIO_WHO_USER.
			anyPid("ioprio_set", 0, 0x2),
			anyPid("ioprio_set", 1, 0xffffffff),
		)
	}
	if o.NoSockets {
		rules = append(rules, Rule{Syscall: "socket", Errno: EACCES,
			Why: "with the network off and no namespace of its own, any socket reaches the host's network"})
	}
	if o.NoSetID {
		// The mode's argument, per call: S_ISUID and S_ISGID are refused.
		// open and openat take a mode only with O_CREAT or O_TMPFILE;
		// without them libc passes 0. openat2 keeps its mode in memory,
		// where seccomp cannot look: libc falls back to openat.
		for _, call := range []struct {
			name string
			arg  uint32
		}{{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"creat", 1}, {"open", 2}, {"openat", 3}, {"mknod", 1}, {"mknodat", 2}} {
			rules = append(rules, Rule{Syscall: call.name, Errno: EPERM,
				Why: "making a file setuid or setgid (it would belong to an idmapped folder's owner)",
				Arg: &ArgMatch{Index: call.arg, Op: MatchAnyBit, Value: setIDBits}})
		}
		rules = append(rules, Rule{Syscall: "openat2", Errno: ENOSYS,
			Why: "openat2 hides its mode from seccomp; libc falls back to openat"})
	}
	if o.NoHostIPC {
		const why = "System V IPC and POSIX message queues: without an IPC namespace of its own, the sandbox would share this machine's"
		for _, name := range hostIPCCalls {
			rules = append(rules, Rule{Syscall: name, Errno: EPERM, Why: why})
		}
	}
	if o.NoListen {
		rules = append(rules, Rule{Syscall: "listen", Errno: EACCES,
			Why: "a listening socket in the host's network is open on every address"},
			Rule{Syscall: "bind", Errno: EACCES,
				Why: "with no listen port there is no TCP port to bind, and a Unix socket bound to an abstract name takes it in the host's network"})
	}
	return rules
}

// Rules returns the deny list. The result is a fresh copy; callers may keep
// or change it.
func Rules() []Rule {
	var rules []Rule
	add := func(why string, errno Errno, names ...string) {
		for _, n := range names {
			rules = append(rules, Rule{Syscall: n, Errno: errno, Why: why})
		}
	}
	add("debugging or reading other processes' memory", EPERM,
		"ptrace", "process_vm_readv", "process_vm_writev")
	add("kernel keyrings are shared across sandboxes", EPERM,
		"keyctl", "add_key", "request_key")
	add("kernel attack surface often used in exploits", EPERM,
		"userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
		"bpf", "perf_event_open", "lookup_dcookie", "uselib")
	add("changing the mount table", EPERM,
		"mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount",
		"fspick", "open_tree", "move_mount", "mount_setattr", "chroot")
	add("joining another namespace", EPERM, "setns")
	add("kernel modules and kexec", EPERM,
		"kexec_load", "kexec_file_load", "init_module", "finit_module",
		"delete_module")
	add("host administration", EPERM,
		"acct", "swapon", "swapoff", "reboot", "syslog", "quotactl",
		"quotactl_fd", "settimeofday", "clock_settime", "adjtimex",
		"clock_adjtime", "vhangup", "iopl", "ioperm")
	add("opening files by handle bypasses the mount jail", EPERM,
		"open_by_handle_at", "name_to_handle_at")
	// clone3 passes its flags in memory, where seccomp cannot look; ENOSYS
	// makes libc fall back to clone(2), whose flags the rules below check.
	add("clone3 hides its flags from seccomp; libc falls back to clone", ENOSYS, "clone3")
	rules = append(rules,
		Rule{Syscall: "unshare", Errno: EPERM, Why: "creating namespaces",
			Arg: &ArgMatch{Index: 0, Op: MatchAnyBit, Value: cloneNewAll | cloneNewTime}},
		Rule{Syscall: "clone", Errno: EPERM, Why: "creating namespaces",
			Arg: &ArgMatch{Index: 0, Op: MatchAnyBit, Value: cloneNewAll}},
		Rule{Syscall: "ioctl", Errno: EPERM, Why: "injecting input into the terminal (TIOCSTI)",
			Arg: &ArgMatch{Index: 1, Op: MatchLow32, Value: tiocsti}},
		Rule{Syscall: "ioctl", Errno: EPERM, Why: "terminal control (TIOCLINUX)",
			Arg: &ArgMatch{Index: 1, Op: MatchLow32, Value: tioclinux}},
	)
	return rules
}
