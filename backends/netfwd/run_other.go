//go:build !linux

package netfwd

import (
	"fmt"
	"io"
)

// Run is the forwarder; it exists on Linux only.
func Run(args []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "senclaw-netfwd: only Linux sandboxes use the forwarder")
	return exitSetup
}

const exitSetup = 125
