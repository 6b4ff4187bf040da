//go:build unix

package backends

import (
	"os"
	"syscall"
)

// StatusOf maps how a sandbox's process ended to an ExitStatus: its exit
// code, or 128+signal when it died by a signal (as a shell, and bwrap,
// report it); oom and killed name the reason of a non-zero end: the
// kernel's OOM killer in the run's cgroup, or the backend's Kill.
func StatusOf(ps *os.ProcessState, oom, killed bool) ExitStatus {
	ws := ps.Sys().(syscall.WaitStatus)
	var st ExitStatus
	switch {
	case ws.Signaled():
		st = ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal().String()}
	default:
		st.Code = ws.ExitStatus()
		if st.Code > 128 && st.Code < 128+65 {
			st.Signal = syscall.Signal(st.Code - 128).String()
		}
	}
	switch {
	case oom && st.Code != 0:
		st.Signal = "killed: out of memory"
	case killed && st.Code != 0:
		st.Signal = "killed"
	}
	return st
}
