//go:build unix

package backends

import (
	"os"
	"os/exec"
	"syscall"
)

// UseTerminal gives cmd the terminal tty (Spec.Terminal) on the standard
// descriptors std (Spec.TerminalFDs) and as the controlling terminal of a
// session of its own, which is also its process group: a kill of the
// group still takes the whole tree. Call it once cmd's ExtraFiles are
// set: with no standard descriptor listed, the terminal is passed after
// them, only to become the controlling one.
func UseTerminal(cmd *exec.Cmd, tty *os.File, std []int) {
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
		ctty = 3 + len(cmd.ExtraFiles)
		cmd.ExtraFiles = append(cmd.ExtraFiles, tty)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = false
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = ctty
}
