package seccompfilter

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/senclaw/sandbox/backends/seccompfilter/internal/int80"
	"golang.org/x/sys/unix"
)

// childEnv makes the test binary act as a child that loads the filter and
// makes one system call (see TestMain).
const childEnv = "SECCOMPFILTER_TEST_CHILD"

func TestMain(m *testing.M) {
	if what := os.Getenv(childEnv); what != "" {
		os.Exit(child(what))
	}
	os.Exit(m.Run())
}

// child loads the filter unless what starts with "nofilter-", makes the call
// named by what, and prints its errno.
func child(what string) int {
	runtime.LockOSThread()
	filtered := what[:min(len(what), 9)] != "nofilter-"
	if filtered {
		if err := load(); err != nil {
			fmt.Println("load:", err)
			return 3
		}
	} else {
		what = what[9:]
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
	}
	fmt.Print(int(errno))
	return 0
}

func load() error {
	b, err := Program()
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.needsI32 {
				out, _ := runChild("nofilter-" + tc.name)
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
