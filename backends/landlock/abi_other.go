//go:build !linux

package landlock

import "errors"

// ABIVersion reports that Landlock exists only on Linux.
func ABIVersion() (int, error) {
	return 0, errors.New("landlock is a Linux feature")
}
