// Readiness for systemd: a unit of Type=notify (build/linux/senclaw.service)
// learns that the daemon is up when its API listens.

package daemon

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// notifySystemd sends state ("READY=1", "STOPPING=1") to the service
// manager when it asked for it ($NOTIFY_SOCKET, a datagram socket; "@"
// starts an abstract name). Without a manager it does nothing.
func notifySystemd(state string) error {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return nil
	}
	if !strings.HasPrefix(addr, "/") && !strings.HasPrefix(addr, "@") {
		return fmt.Errorf("NOTIFY_SOCKET %q is not a Unix socket path", addr)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("telling systemd %s: %w", state, err)
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state + "\nMAINPID=" + fmt.Sprint(os.Getpid()) + "\n"))
	return err
}
