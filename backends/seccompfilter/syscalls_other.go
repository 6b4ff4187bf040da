//go:build !linux || !(amd64 || arm64 || 386 || arm)

package seccompfilter

// There is no system call table here: InstructionsFor refuses to build a
// filter rather than one that names no system call.
const (
	nativeTable   = false
	auditArch     = 0
	x32SyscallBit = 0
)

func syscallNumber(string) (uint32, bool) { return 0, false }
