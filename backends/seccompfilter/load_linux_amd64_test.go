package seccompfilter

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/backends/reexec"
	"github.com/senclaw/sandbox/backends/seccompfilter/internal/int80"
)

// childEnv makes the test binary act as a child that loads the filter and
// makes one system call (see TestMain).
const childEnv = "SECCOMPFILTER_TEST_CHILD"

func TestMain(m *testing.M) {
	reexec.Init()
	if what := os.Getenv(childEnv); what != "" {
		os.Exit(child(what))
	}
	os.Exit(m.Run())
}

// landlockOptions are the options of the Landlock backend's filter.
var landlockOptions = Options{InetStreamOnly: true, NoListen: true, OwnProcessOnly: true, NoHostIPC: true}

// child loads the filter unless what starts with "nofilter-" (the Landlock
// backend's variant when it starts with "landlock-"), makes the call named
// by what, and prints its errno.
func child(what string) int {
	runtime.LockOSThread()
	o, filtered := Options{}, true
	if rest, ok := strings.CutPrefix(what, "nofilter-"); ok {
		what, filtered = rest, false
	} else if rest, ok := strings.CutPrefix(what, "landlock-"); ok {
		what, o = rest, landlockOptions
	}
	if filtered {
		if err := load(o); err != nil {
			fmt.Println("load:", err)
			return 3
		}
	}
	var errno syscall.Errno
	switch what {
	case "ptrace":
		_, _, errno = unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
	case "clone3":
		_, _, errno = unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
	case "unshare_user":
		_, _, errno = unix.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER, 0, 0)
	case "x32_getpid":
		_, _, errno = unix.RawSyscall(0x40000000|unix.SYS_GETPID, 0, 0, 0)
	case "i386_getpid":
		r := int80.Syscall(20, 0, 0, 0) // __NR_getpid on i386
		if int(r) != os.Getpid() {
			errno = syscall.Errno(-int(r))
		}
	case "shmget":
		var id uintptr
		id, _, errno = unix.RawSyscall(unix.SYS_SHMGET, unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
		if errno == 0 {
			unix.RawSyscall(unix.SYS_SHMCTL, id, unix.IPC_RMID, 0)
		}
	case "mq_open":
		name := []byte("senclaw-seccomp-test\x00")
		_, _, errno = unix.RawSyscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(&name[0])), unix.O_RDONLY, 0, 0, 0, 0)
	case "i386_ipc_shmget":
		// ipc(SHMGET, IPC_PRIVATE, 4096, IPC_CREAT|0600) on i386.
		r := int80.Syscall(117, 23, unix.IPC_PRIVATE, 4096)
		if int32(r) < 0 {
			errno = syscall.Errno(-int32(r))
		}
	}
	fmt.Print(int(errno))
	return 0
}

func load(o Options) error {
	b, err := ProgramFor(o)
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(b) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&b[0]))}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if e != 0 {
		return e
	}
	return nil
}

// TestLoadedFilter loads the program into a real child process and checks
// what the kernel answers, including calls through the i386 and x32 ABIs.
func TestLoadedFilter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		want     string // printed errno, or "" when the child must die by SIGSYS
		wantSig  syscall.Signal
		needsI32 bool
	}{
		{name: "ptrace", want: fmt.Sprint(int(unix.EPERM))},
		{name: "clone3", want: fmt.Sprint(int(unix.ENOSYS))},
		{name: "unshare_user", want: fmt.Sprint(int(unix.EPERM))},
		{name: "x32_getpid", want: fmt.Sprint(int(unix.ENOSYS))},
		{name: "i386_getpid", wantSig: unix.SIGSYS, needsI32: true},
		{name: "landlock-shmget", want: fmt.Sprint(int(unix.EPERM))},
		{name: "landlock-mq_open", want: fmt.Sprint(int(unix.EPERM))},
		{name: "landlock-i386_ipc_shmget", wantSig: unix.SIGSYS, needsI32: true},
		{name: "nofilter-shmget", want: "0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.needsI32 {
				out, _ := runChild("nofilter-i386_getpid")
				if out != "0" {
					t.Skipf("the kernel has no i386 emulation (int 0x80 got %q)", out)
				}
			}
			out, err := runChild(tc.name)
			if tc.wantSig != 0 {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("child survived an i386 system call: out=%q err=%v", out, err)
				}
				ws := ee.Sys().(syscall.WaitStatus)
				if !ws.Signaled() || ws.Signal() != tc.wantSig {
					t.Fatalf("child ended with %v, want signal %v", ws, tc.wantSig)
				}
				return
			}
			if err != nil || out != tc.want {
				t.Fatalf("got %q (err %v), want errno %s", out, err, tc.want)
			}
		})
	}
}

func runChild(what string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+what)
	out, err := cmd.Output()
	return string(out), err
}
