//go:build !linux

package idmap

import (
	"errors"
	"fmt"
	"os"
)

var errLinuxOnly = errors.New("idmapped mounts are Linux only")

// Clone is Linux only.
func Clone(dir *os.File, m Mapping) (*os.File, error) { return nil, errLinuxOnly }

// Check is Linux only.
func Check(path string, m Mapping) error { return errLinuxOnly }

// Main is Linux only.
func Main(args []string) int {
	fmt.Fprintln(os.Stderr, "senclaw idmap launcher:", errLinuxOnly)
	return 125
}
