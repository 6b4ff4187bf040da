//go:build !linux

package portowner

import "errors"

// Holding cannot tell here: there is no /proc/net/tcp.
func Holding(port int) ([]Holder, error) { return nil, errors.ErrUnsupported }
