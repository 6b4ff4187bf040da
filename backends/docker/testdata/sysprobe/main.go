// Command sysprobe tries one system call the sandbox must deny and prints
// the errno it got ("EPERM", "ok", ...). It is built static (CGO off) by the
// docker backend's tests and run inside a container, whose image may have
// no compiler or libc.
package main

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sysprobe io_uring|tiocsti|unshare_user|keyctl|ptrace")
		os.Exit(2)
	}
	var errno syscall.Errno
	switch os.Args[1] {
	case "io_uring":
		// io_uring_setup(1, &params) is syscall 425 on every 64-bit arch
		// with the generic table and on x86_64.
		params := make([]byte, 120)
		_, _, errno = syscall.RawSyscall(425, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	case "tiocsti":
		c := byte('x')
		_, _, errno = syscall.RawSyscall(syscall.SYS_IOCTL, 0, syscall.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	case "tiocsti_high":
		// The high half of the request set: the kernel truncates it to
		// 32 bits, so the filter must look at the low half only.
		c := byte('x')
		_, _, errno = syscall.RawSyscall(syscall.SYS_IOCTL, 0, 1<<32|syscall.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	case "fionread":
		// An ordinary ioctl on a pipe must keep working.
		var fds [2]int
		if err := syscall.Pipe(fds[:]); err != nil {
			errno = err.(syscall.Errno)
			break
		}
		var n int32
		_, _, errno = syscall.RawSyscall(syscall.SYS_IOCTL, uintptr(fds[0]), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	case "unshare_user":
		_, _, errno = syscall.RawSyscall(syscall.SYS_UNSHARE, syscall.CLONE_NEWUSER, 0, 0)
	case "keyctl":
		_, _, errno = syscall.RawSyscall(syscall.SYS_KEYCTL, 0, 0, 0)
	case "ptrace":
		_, _, errno = syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_TRACEME, 0, 0)
	default:
		fmt.Fprintln(os.Stderr, "unknown probe", os.Args[1])
		os.Exit(2)
	}
	switch errno {
	case 0:
		fmt.Println("ok")
	case syscall.EPERM:
		fmt.Println("EPERM")
	case syscall.ENOSYS:
		fmt.Println("ENOSYS")
	case syscall.ENOTTY:
		fmt.Println("ENOTTY")
	case syscall.EINVAL:
		fmt.Println("EINVAL")
	default:
		fmt.Println(errno.Error())
	}
}
