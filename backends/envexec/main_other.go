//go:build !linux

package envexec

import (
	"fmt"
	"io"
)

// Main is the launcher; it needs Linux.
func Main(args []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "senclaw launcher: needs Linux")
	return 127
}
