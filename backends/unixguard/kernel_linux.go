package unixguard

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp user notification ABI (linux/seccomp.h); golang.org/x/sys
// has the constants of RECV and SEND but not the structures.

// seccompData is struct seccomp_data.
type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// notif is struct seccomp_notif.
type notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// notifResp is struct seccomp_notif_resp.
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// notifSizes is struct seccomp_notif_sizes.
type notifSizes struct {
	Notif     uint16
	NotifResp uint16
	Data      uint16
}

const (
	// ioctlIDValid is SECCOMP_IOCTL_NOTIF_ID_VALID, _IOW('!', 2, __u64).
	ioctlIDValid = 0x40082102
	// ioctlSetFlags is SECCOMP_IOCTL_NOTIF_SET_FLAGS, _IOW('!', 4, __u64).
	ioctlSetFlags = 0x40082104
	// pidfdThread is PIDFD_THREAD (O_EXCL): a pidfd of one thread, since
	// Linux 6.9.
	pidfdThread = unix.O_EXCL
)

var _ [80]byte = [unsafe.Sizeof(notif{})]byte{}
var _ [24]byte = [unsafe.Sizeof(notifResp{})]byte{}

// spare is room after a structure for what a later kernel may add to it
// (the sizes are the kernel's: SECCOMP_GET_NOTIF_SIZES); it stays zero.
type spare [192]byte

// recv receives one notification (the buffer is zeroed first, as the
// kernel demands).
func recv(fd int) (notif, error) {
	var b struct {
		n notif
		_ spare
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&b)))
	return b.n, errnoErr(e)
}

// send answers a notification.
func send(fd int, r notifResp) error {
	b := struct {
		r notifResp
		_ spare
	}{r: r}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&b)))
	return errnoErr(e)
}

// idValid reports whether the notification id still waits for an answer:
// its task is alive and still in the system call.
func idValid(fd int, id uint64) bool {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlIDValid, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// getNotifSizes asks the kernel for the sizes of its notification
// structures; it fails where there is no user notification (before 5.0).
func getNotifSizes() (notifSizes, error) {
	var s notifSizes
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&s)))
	return s, errnoErr(e)
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
