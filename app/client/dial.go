package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/rundir"
)

// PeerError is an engine socket served by a process of another user than
// this one (or root): whoever put it there could read everything sent to
// it (a run's secrets, a hook's whole environment), so nothing was sent.
type PeerError struct {
	Socket   string
	UID, PID int
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("the engine socket %s is served by %s (pid %d), not by you (%s) or root: another user may have put it there "+
		"to read what senclaw sends, so nothing was sent. See who runs it (ps -o user,pid,cmd -p %d); remove the socket if it is not "+
		"your engine's, or set XDG_RUNTIME_DIR to a folder of your own",
		e.Socket, rundir.UserName(e.UID), e.PID, rundir.UserName(os.Geteuid()), e.PID)
}

// IsUntrusted reports whether err is a refusal to talk to a socket, or to
// use a runtime dir, that another user could have made: starting another
// daemon would not help, and nothing was sent.
func IsUntrusted(err error) bool {
	var pe *PeerError
	var ue *rundir.UnsafeError
	return errors.As(err, &pe) || errors.As(err, &ue)
}

// DialUnix connects to the engine's Unix socket at path, the one dialer
// every client of the engine uses (the CLI, the MCP stdio server, the
// hooks, the agent shell, the tray and the window): the socket's folder
// must pass the runtime dir's owner and mode check (rundir.Check), and
// the process that listens must be this user's or root's (SO_PEERCRED,
// read before a byte is written). Otherwise the connection is closed
// unused and the error says why.
func DialUnix(ctx context.Context, path string) (net.Conn, error) {
	dir, err := rundir.Check(filepath.Dir(path))
	if errors.Is(err, os.ErrNotExist) {
		// No folder, no daemon: unavailable, as a socket nobody listens on.
		return nil, &net.OpError{Op: "dial", Net: "unix", Addr: &net.UnixAddr{Name: path, Net: "unix"}, Err: err}
	}
	if err != nil {
		return nil, err
	}
	dir.Close()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	uid, pid, err := peerOf(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("checking who serves %s: %w; nothing was sent", path, err)
	}
	if uid >= 0 && uid != os.Geteuid() && uid != 0 {
		conn.Close()
		return nil, &PeerError{Socket: path, UID: uid, PID: pid}
	}
	return conn, nil
}

// dialTimeout is DialUnix within d.
func dialTimeout(path string, d time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return DialUnix(ctx, path)
}

// ReadDaemonInfo reads the info file of a running daemon, once the
// runtime dir passed the owner and mode check (rundir.Check): a folder
// another user made could hold any info.
func ReadDaemonInfo(runtimeDir string) (apitype.DaemonInfo, error) {
	var info apitype.DaemonInfo
	dir, err := rundir.Check(runtimeDir)
	if err != nil {
		return info, err
	}
	defer dir.Close()
	data, err := dir.ReadFile(apitype.InfoFile, apitype.MaxInfo, "daemon's info file")
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(data, &info)
}
