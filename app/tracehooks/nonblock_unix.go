//go:build unix

package tracehooks

import "syscall"

// nonBlock keeps a FIFO planted as the trace file from blocking the engine.
const nonBlock = syscall.O_NONBLOCK
