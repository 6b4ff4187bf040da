//go:build !linux && !darwin

package client

import "net"

// peerOf cannot tell who listens here (no SO_PEERCRED): uid -1, and the
// runtime dir's own check is all there is.
func peerOf(net.Conn) (uid, pid int, err error) { return -1, -1, nil }
