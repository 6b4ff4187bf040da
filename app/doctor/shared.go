package doctor

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/senclaw/sandbox/app/portowner"
	"github.com/senclaw/sandbox/app/rundir"
)

// checkPort looks at who listens on the dashboard's configured port: any
// socket of another user there (on any address: a client dialling
// localhost may reach [::1] first) may be waiting for the owner's token.
func (d *Doctor) checkPort() []Check {
	if d.opts.Listen == "" {
		return nil
	}
	c := Check{Name: "dashboard port", Status: OK}
	_, p, err := net.SplitHostPort(d.opts.Listen)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || port == 0 {
		return nil
	}
	holders, err := portowner.Holding(port)
	if err != nil {
		c.Status, c.Detail = Warn, fmt.Sprintf("who listens on %s cannot be read: %v", d.opts.Listen, err)
		return []Check{c}
	}
	var foreign, mine, ours []portowner.Holder
	for _, h := range holders {
		switch {
		case h.UID != d.opts.EUID:
			foreign = append(foreign, h)
		case h.PID == os.Getpid():
			ours = append(ours, h)
		default:
			mine = append(mine, h)
		}
	}
	switch {
	case len(foreign) > 0:
		c.Status = Fail
		c.Detail = fmt.Sprintf("port %d is held by another user: %s; it may be waiting for your token, which clients configured for the port would send it", port, portowner.Describe(foreign))
		c.Fix = "have that program stopped (ask its owner, or as root: kill PID), or move senclaw to another port (--listen ADDR or SENCLAW_LISTEN=ADDR) and give your MCP clients the address (senclaw mcp-config --write)"
	case len(ours) == 0 && len(mine) > 0:
		c.Status = Warn
		c.Detail = fmt.Sprintf("port %d is held by another program of yours: %s; this engine listens elsewhere, where clients configured for %s do not reach it", port, portowner.Describe(mine), d.opts.Listen)
		c.Fix = "stop that program (a second senclaw: senclaw stop in its environment), then senclaw stop and start this one again"
	case len(ours) == 0:
		c.Status = Warn
		c.Detail = fmt.Sprintf("nothing listens on %s: this engine serves the dashboard elsewhere or not over HTTP", d.opts.Listen)
	default:
		c.Detail = fmt.Sprintf("%s is this engine's (no one else listens on port %d)", d.opts.Listen, port)
	}
	return []Check{c}
}

// checkRuntimeDir checks the runtime dir as the engine makes it: a
// folder of the engine's uid that no one else may enter.
func (d *Doctor) checkRuntimeDir() []Check {
	if d.opts.RuntimeDir == "" {
		return nil
	}
	c := Check{Name: "runtime dir", Status: OK, Detail: d.opts.RuntimeDir + " is the engine's own, mode 0700"}
	dir, err := rundir.Check(d.opts.RuntimeDir)
	if err == nil {
		dir.Close()
		if fi, serr := os.Stat(d.opts.RuntimeDir); serr == nil && ownerOf(fi) != d.opts.EUID {
			err = &rundir.UnsafeError{Path: d.opts.RuntimeDir, What: "runtime dir", UID: ownerOf(fi), Mode: fi.Mode().Perm(), Want: d.opts.EUID}
		}
	}
	if err != nil {
		c.Status, c.Detail = Fail, err.Error()
		c.Fix = "remove it if it is not yours (as root), or set XDG_RUNTIME_DIR to a folder of your own; then senclaw stop and start again"
	}
	return []Check{c}
}
