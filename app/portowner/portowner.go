// Package portowner finds who listens on a local TCP port: the uid and, when visible, the process.
//
// A port the engine wants (the dashboard's 127.0.0.1:7878) may be held by
// another user's program waiting for the owner's token: the engine and
// the doctor name the holder so that a person can tell a second engine of
// their own from a squatter.
package portowner

import (
	"fmt"
	"strings"

	"github.com/senclaw/sandbox/app/rundir"
	"github.com/senclaw/sandbox/app/safetext"
)

// Holder is one listening socket on the port.
type Holder struct {
	// Addr is the address it is bound to ("127.0.0.1:7878", "[::]:7878").
	Addr string
	UID  int
	// Listens is false for a socket bound to the port that does not
	// listen (yet), or that connected from it.
	Listens bool
	// PID and Command are the process holding the socket; PID 0 when it
	// cannot be seen (another user's /proc/PID/fd is closed to us).
	PID     int
	Command string
}

func (h Holder) String() string {
	proc := "a process senclaw cannot see"
	if h.PID > 0 {
		proc = fmt.Sprintf("pid %d (%s)", h.PID, safetext.Escape(h.Command)) // the holder chose its name
	}
	on := "on"
	if !h.Listens {
		on = "bound, not listening, to"
	}
	return fmt.Sprintf("%s of %s %s %s", proc, rundir.UserName(h.UID), on, h.Addr)
}

// Describe lists holders in one phrase, "" for none.
func Describe(hs []Holder) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.String())
	}
	return strings.Join(parts, "; ")
}
