//go:build unix

package tracehooks

import "syscall"

// nonBlock keeps a FIFO planted as the trace file from blocking the engine.
const nonBlock = syscall.O_NONBLOCK

// dirOnly opens only a directory.
const dirOnly = syscall.O_DIRECTORY
