package docker

import (
	"context"
	"net"

	"github.com/Microsoft/go-winio"
)

// defaultHost is where Docker's daemon listens when nothing says
// otherwise.
const defaultHost = "npipe:////./pipe/docker_engine"

// dialPipe connects to a named pipe (npipe:////./pipe/NAME gives
// //./pipe/NAME).
func dialPipe(ctx context.Context, name string) (net.Conn, error) {
	return winio.DialPipeContext(ctx, name)
}
