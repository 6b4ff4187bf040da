//go:build !linux

package api

import "net"

// peerChecked relies on the socket file's 0600 mode in a 0700 directory
// where SO_PEERCRED does not exist.
func peerChecked(l net.Listener) net.Listener { return l }
