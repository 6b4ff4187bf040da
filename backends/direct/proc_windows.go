package direct

import (
	"os"
	"syscall"

	"github.com/senclaw/sandbox/backends"
)

func sysProcAttr(*backends.Credential) *syscall.SysProcAttr { return nil }

func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}

// termGroup: Windows has no SIGTERM; the process is killed.
func termGroup(pid int) error { return killGroup(pid) }

// killPid kills one process.
func killPid(pid int) error { return killGroup(pid) }
