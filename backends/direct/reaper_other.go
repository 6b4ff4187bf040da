//go:build !linux

package direct

import (
	"fmt"
	"os"
)

// RunReaper is Linux only: elsewhere there are no subreapers.
func RunReaper([]string) int {
	fmt.Fprintln(os.Stderr, "senclaw: the direct run subreaper needs Linux")
	return 2
}
