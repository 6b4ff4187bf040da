// Package int80 makes a system call through the i386 ABI (int $0x80) from a
// 64-bit process.
//
// Tests use it to check that the seccomp filter does not let a process
// bypass it with 32-bit system call numbers.
package int80
