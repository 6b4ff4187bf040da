package direct

import "syscall"

// setDeathSignal makes the child die with the engine.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
