package unixguard

import (
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/senclaw/sandbox/backends"
)

// Name is the guard's name on the capability card.
const Name = "unixguard"

// Policy is what one guarded run may reach besides abstract and inet
// addresses (see the package doc).
type Policy struct {
	// Workspace is the sandbox's workspace: a host path, bound at the same
	// path inside.
	Workspace string
	// Plumbing, when set, is the engine's plumbing directory (the proxy
	// socket, the forwarder's listen sockets) and where it appears inside.
	Plumbing *Bind
	// Sockets are host paths of sockets the sandbox may reach by that
	// path in every fs mode: the settings' allowedSockets.
	Sockets []string
	// User is who connects: the sandbox's host user; nil is the engine's
	// own user.
	User *backends.Credential
	// Observe, when set, is told of every connect the guard answered (a
	// traced run: strace does not see the calls the guard takes; the
	// engine's record of what a run was refused).
	Observe func(Connect)
	// Inet, when set, is a sandbox without a network namespace of its
	// own (Landlock), whose sockets are in this machine's network: the
	// guard then also takes bind() and listen(), and does, of inet
	// connects, binds and listens, only what Inet allows (EACCES for the
	// rest). Such a sandbox has no places of its own: pathname Unix
	// sockets are reached only when Sockets names them.
	Inet *InetRules
}

// InetRules are what a sandbox in this machine's network may do with
// inet sockets. Landlock's TCP rules name ports, not addresses: these
// name both.
type InetRules struct {
	// Connect are the only addresses a connect() reaches (the run's door
	// to the engine's proxy).
	Connect []netip.AddrPort
	// Bind are the ports a socket may be bound to, and only on a loopback
	// address (127.0.0.1 or ::1); listen() only on a socket bound so (a
	// listen() on an unbound socket would open a random port on every
	// address of this machine).
	Bind []uint16
}

// Connect is one connect() the guard answered.
type Connect struct {
	// Pid is the calling process (host pid).
	Pid int
	// Carrier says that the caller is the process that handed the guard
	// over: the forwarder, or the command it became.
	Carrier bool
	// Target is "127.0.0.1:80", "[::1]:80", "unix:/path" or "unix:@name",
	// as the caller gave it.
	Target string
	// Errno names the error ("EACCES"), "" when it connected.
	Errno string
	// Refused says that the guard refused it (the socket is not in the
	// sandbox's places, nor named), not the kernel.
	Refused bool
}

// Bind is a host directory and where it appears inside the sandbox.
type Bind struct {
	Host, Inside string
}

// engineSockets are the sockets of container engines: whoever reaches one
// is root on the host, so no setting may open one to a sandbox.
var engineSockets = []string{
	"docker.sock", "containerd.sock", "podman.sock", "crio.sock",
	"buildkitd.sock", "dockershim.sock", "cri-dockerd.sock", "incus.socket",
	"lxd.socket", "unix.socket",
}

// CheckNamed checks a socket path the owner wants to open to sandboxes (a
// settings' allowedSockets entry): an absolute, clean path with no symlink
// in it (the guard resolves it without following any), which, if it
// exists, is a socket, and which is not a container engine's socket. The
// engine adds its own checks (its own sockets and directories).
func CheckNamed(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("must be the absolute, clean path of a socket")
	}
	if slices.Contains(engineSockets, path.Base(p)) {
		return fmt.Errorf("is a container engine's socket: whoever reaches it controls the host as root, so it is never opened to a sandbox")
	}
	dir := path.Dir(p)
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		return fmt.Errorf("goes through a symlink (%s is %s), which the guard does not follow; give the real path %q", dir, real, filepath.Join(real, path.Base(p)))
	}
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return nil // the service may not be running yet
	case fi.Mode()&fs.ModeSymlink != 0:
		real, _ := filepath.EvalSymlinks(p)
		return fmt.Errorf("is a symlink (to %q), which the guard does not follow; give the socket's real path", real)
	case fi.Mode()&fs.ModeSocket == 0:
		return fmt.Errorf("is not a socket")
	}
	return nil
}
