//go:build unix

package cli

import (
	"os"
	"syscall"
)

// execEngine replaces this process with the engine's executable, argv
// its arguments (argv[0] the name ps shows). It returns only on failure.
func execEngine(path string, argv []string) (int, error) {
	return 0, syscall.Exec(path, argv, os.Environ())
}
