package unixguard

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/sys/unix"
)

// features is what the kernel offers the guard.
type features struct {
	ok  bool
	why string // what is missing, in words, when !ok
	// threadPidfd: pidfd_open takes PIDFD_THREAD (6.9).
	threadPidfd bool
	release     string
}

// kernel probes the kernel once: its features do not change while the
// engine runs.
var kernel = sync.OnceValue(probeKernel)

func probeKernel() features {
	f := features{release: release()}
	missing := func(what string) features {
		f.why = fmt.Sprintf("this kernel (Linux %s) lacks %s", f.release, what)
		return f
	}
	if !archSupported {
		f.why = "the guard is not built for this architecture"
		return f
	}
	if s, err := getNotifSizes(); err != nil || s.Notif < uint16(unsafe.Sizeof(notif{})) || s.NotifResp < uint16(unsafe.Sizeof(notifResp{})) {
		return missing("seccomp user notification (Linux 5.0)")
	}
	action := uint32(unix.SECCOMP_RET_USER_NOTIF)
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action))); e != 0 {
		return missing("seccomp user notification (Linux 5.0)")
	}
	self, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return missing("pidfd_open (Linux 5.3)")
	}
	defer unix.Close(self)
	fd, err := unix.PidfdGetfd(self, 0, 0)
	if err != nil && err != unix.EBADF {
		return missing("pidfd_getfd (Linux 5.6)")
	}
	if err == nil {
		unix.Close(fd)
	}
	root, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: inside})
	if err != nil {
		return missing("openat2 (Linux 5.6)")
	}
	defer unix.Close(root)
	if _, err := statx(root); err != nil {
		return missing("statx with mount ids (Linux 5.8)")
	}
	var buf [1]byte
	if _, err := unix.ProcessVMReadv(os.Getpid(), []unix.Iovec{{Base: &buf[0], Len: 1}}, []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&buf[0])), Len: 1}}, 0); err != nil {
		return missing("process_vm_readv")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) == "3" {
		f.why = "Yama's ptrace_scope is 3 on this machine, which forbids the engine to read a sandboxed process's connect() address and socket (pidfd_getfd, process_vm_readv)"
		return f
	}
	if t, err := unix.PidfdOpen(unix.Gettid(), pidfdThread); err == nil {
		unix.Close(t)
		f.threadPidfd = true
	}
	f.ok = true
	return f
}

func release() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// Available reports whether this kernel can run the guard, and if not,
// what it lacks.
func Available() (bool, string) {
	f := kernel()
	return f.ok, f.why
}

// Probe says whether the guard works on this machine, for the capability
// card. It is a facility: bwrap sandboxes use it.
func Probe() backends.Capability {
	f := kernel()
	c := backends.Capability{
		Backend:   Name,
		Isolates:  true,
		Version:   "seccomp user notification",
		Details:   map[string]string{"kernel": f.release},
		CheckedAt: time.Now(),
	}
	if !f.ok {
		c.State = backends.NeverSeen
		c.Reason = f.why + ", so the engine cannot check connect(): pathname Unix sockets that a sandbox can see are reachable from it (in open mode any world-writable socket outside /run; in every mode sockets in its mounts and allowlisted folders)"
		return c
	}
	c.State = backends.Healthy
	c.Enforces = []string{"unix-sockets"}
	c.Reason = "connect() in every bwrap sandbox is checked by the engine (seccomp user notification): of the pathname Unix sockets, only those in the sandbox's workspace and private /tmp, the engine's proxy and the settings' allowedSockets are reachable; Unix datagram sockets cannot be made"
	if !f.threadPidfd {
		c.Details["pidfd"] = "per process (Linux < 6.9): a thread that unshared its descriptor table may have another of its sockets connected"
	}
	return c
}
