package int80

// Syscall makes system call trap with the i386 ABI and returns the raw
// result register (a negative errno on failure).
func Syscall(trap, a1, a2, a3 uintptr) uintptr
