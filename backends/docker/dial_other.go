//go:build !windows

package docker

import (
	"context"
	"errors"
	"net"
)

// defaultHost is where Docker's daemon listens when nothing says
// otherwise.
const defaultHost = "unix:///var/run/docker.sock"

// dialPipe refuses: named pipes are Windows'.
func dialPipe(context.Context, string) (net.Conn, error) {
	return nil, errors.New("npipe:// hosts exist only on Windows")
}
