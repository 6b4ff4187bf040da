//go:build !unix

package cli

import "io"

// termWidth is 0 where the terminal's size is not read: nothing is cut.
func termWidth(io.Writer) int { return 0 }
