package cli

import "syscall"

// detached starts the daemon in a process group of its own with no
// console, away from the one that started it.
func detached() *syscall.SysProcAttr {
	const detachedProcess = 0x00000008
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | detachedProcess}
}
