//go:build !unix

package backends

import (
	"os"
	"os/exec"
)

// UseTerminal is never called here: no backend implements Terminals on
// this system.
func UseTerminal(*exec.Cmd, *os.File, []int) {}
