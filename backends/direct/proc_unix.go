//go:build unix

package direct

import (
	"errors"
	"syscall"

	"github.com/senclaw/sandbox/backends"
)

func sysProcAttr(user *backends.Credential) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(attr)
	if user != nil {
		attr.Credential = &syscall.Credential{Uid: user.UID, Gid: user.GID, Groups: []uint32{}}
	}
	return attr
}

// killGroup kills the process group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// GivesTerminals reports that Start honours Spec.Terminal.
func (*Backend) GivesTerminals() bool { return true }

// termGroup asks the process group led by pid to end.
func termGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGTERM)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// killPid kills one process.
func killPid(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
