//go:build unix

package direct

import (
	"errors"
	"os"
	"os/exec"
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

// useTerminal gives cmd the terminal tty on the standard descriptors std
// and as the controlling terminal of a session of its own (which is also
// its process group, so killGroup still takes the whole tree).
func useTerminal(cmd *exec.Cmd, tty *os.File, std []int) {
	ctty := -1
	for _, fd := range std {
		switch fd {
		case 0:
			cmd.Stdin = tty
		case 1:
			cmd.Stdout = tty
		case 2:
			cmd.Stderr = tty
		}
		if ctty < 0 {
			ctty = fd
		}
	}
	if ctty < 0 {
		// No standard descriptor is the terminal: it still becomes the
		// controlling one, passed as fd 3.
		cmd.ExtraFiles = append(cmd.ExtraFiles, tty)
		ctty = 3
	}
	cmd.SysProcAttr.Setpgid = false
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = ctty
}

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
