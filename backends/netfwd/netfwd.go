// Package netfwd is the in-sandbox half of SenClaw's network plumbing on
// Linux. A sandbox has its own network namespace with nothing but loopback;
// the tiny forwarder (cmd/senclaw-netfwd, a static binary built from Run)
// wraps the sandboxed command and, inside that namespace, listens on
// loopback for the proxy ports and relays each connection over a Unix
// socket to the engine's egress proxy, which applies the sandbox's rules.
// It also serves the sandbox's listen ports on Unix sockets so that the
// engine can forward 127.0.0.1:P on the host into the namespace.
//
// Its second role is the run's terminal: given a pseudo-terminal's slave
// descriptor (--tty-fd), it makes that terminal the controlling terminal
// of a new session and the standard descriptors listed (--tty-std), then
// runs the command in the terminal's foreground, so that ^C, ^Z and window
// size changes reach it as on any terminal. The master side stays with
// the engine.
//
// Its third role is a sandbox made ahead of its command (--argv-fd): the
// sandbox is set up whole and the forwarder waits on a descriptor for the
// command, which the engine writes (EncodeArgv) when a run takes the
// sandbox; then it execs it as it would one given after "--".
//
// Argv and ArgvWith build the wrapped command line (pure functions the
// backends use); Run is the forwarder itself.
package netfwd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// Fixed places inside every sandbox with network plumbing.
const (
	// MountDir is where the sandbox's plumbing directory (Spec.Net.Dir)
	// appears inside: the proxy socket and the listen sockets.
	MountDir = "/run/senclaw"
	// BinaryPath is where the forwarder binary appears inside, read-only.
	BinaryPath = "/run/senclaw-netfwd"
	// ProxySocket is the engine's proxy socket, in the plumbing directory.
	ProxySocket = "proxy.sock"
	// NodePreload is the Node.js preload that routes fetch, http and https
	// through the proxy, in the plumbing directory.
	NodePreload = "node-proxy.cjs"
	// CABundle is this machine's trusted roots and the engine's proxy CA,
	// in the plumbing directory: what the sandbox's TLS clients trust.
	CABundle = "ca-bundle.pem"
	// HTTPPort and SOCKSPort are the loopback ports inside the sandbox
	// where the HTTP proxy and the SOCKS5 proxy answer.
	HTTPPort  = 3128
	SOCKSPort = 1080
)

// ListenSocket is the name, in the plumbing directory, of the Unix socket
// through which the engine reaches the sandbox's listen port p.
func ListenSocket(p int) string { return "listen-" + strconv.Itoa(p) + ".sock" }

// Reserved reports whether p is taken inside the sandbox by the forwarder
// itself, so it can be neither a listen nor a loopback port.
func Reserved(p int) bool { return p == HTTPPort || p == SOCKSPort }

// PrivilegedPort reports whether binding p needs a privilege.
func PrivilegedPort(p int) bool { return p > 0 && p < 1024 }

// PrivilegedLoopback returns the ports of loopback that the engine binds
// for the forwarder (Handles.Ports): those below 1024.
func PrivilegedLoopback(loopback []int) []int {
	var out []int
	for _, p := range loopback {
		if PrivilegedPort(p) {
			out = append(out, p)
		}
	}
	return out
}

// Argv wraps argv in the forwarder as seen inside the sandbox: the
// forwarder opens its listeners, then runs argv as its child and ends
// with it. It is a pure function.
func Argv(net *backends.NetPlumbing, argv []string) []string {
	return ArgvWith(net, Handles{}, argv)
}

// TTY says where the run's terminal is inside the sandbox: the descriptor
// that holds it, and the standard descriptors (0, 1, 2) it is to become.
type TTY struct {
	FD  int
	Std []int
}

// Handles are the descriptors the helper inherits for what the run needs
// of it besides the network plumbing; a zero field is not given.
type Handles struct {
	// TTY is the run's terminal.
	TTY *TTY
	// UnixGuard is the descriptor over which the forwarder hands the Unix
	// socket guard to the engine before anything else
	// (backends/unixguard).
	UnixGuard int
	// Ports is the descriptor over which the engine binds the loopback
	// ports below 1024 (PortsHandoff).
	Ports int
	// Argv is the descriptor the command comes over (EncodeArgv); the
	// argv given to ArgvWith is then empty.
	Argv int
	// Reap, in a container of a Docker engine on another machine, is the
	// pid file of the run: the forwarder writes its pid there, runs the
	// command as its child, and when the command ends kills and reaps
	// every process the run left (setsid and double forks included: it
	// is their subreaper), so that the run's end is its whole tree's.
	Reap string
}

// RelayArg starts the forwarder's relay role in a container of a Docker
// engine on another machine, where no directory of the engine's can be
// bound: it answers the proxy socket in the plumbing directory named
// after it and carries each connection over its stdin and stdout to the
// engine (backends/netfwd/mux), which also reaches the run's listen
// sockets through it ("listen:P" streams).
const RelayArg = "--relay"

// RelayReady is the relay's hello once its socket answers.
const RelayReady = "senclaw-relay-ready"

// ListenMeta is the words of a stream to listen port p.
func ListenMeta(p int) string { return "listen:" + strconv.Itoa(p) }

// MaxArgv bounds a command handed over Handles.Argv, encoded: what Linux
// takes for a command line with its environment at the default 8 MiB
// stack (a quarter of it).
const MaxArgv = 2 << 20

// EncodeArgv encodes argv for Handles.Argv: the number of arguments,
// then each argument, each ended by a NUL. The count makes a command cut
// short (the engine died while it wrote) a malformed one, never a
// shorter command that runs. An argument holding a NUL would split in
// two, so it is refused, as are an empty argv and one longer than
// MaxArgv.
func EncodeArgv(argv []string) ([]byte, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("no command to hand over")
	}
	count := strconv.Itoa(len(argv))
	n := len(count) + 1
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("refusing an argument that holds a NUL byte: %q", a)
		}
		n += len(a) + 1
	}
	if n > MaxArgv {
		return nil, fmt.Errorf("the command is %d bytes, more than the %d a command line may have", n, MaxArgv)
	}
	b := make([]byte, 0, n)
	b = append(append(b, count...), 0)
	for _, a := range argv {
		b = append(append(b, a...), 0)
	}
	return b, nil
}

// ReadArgv reads a command encoded by EncodeArgv from r until its end
// (the engine closes its side once written) and closes r. What does not
// hold exactly the arguments its count names is refused whole.
func ReadArgv(r io.ReadCloser) ([]string, error) {
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, MaxArgv+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading the command: %w", err)
	case len(b) == 0:
		return nil, errors.New("no command came: the engine gave the sandbox up")
	case len(b) > MaxArgv:
		return nil, fmt.Errorf("the command is longer than %d bytes", MaxArgv)
	case b[len(b)-1] != 0:
		return nil, errors.New("the command came malformed (cut short)")
	}
	parts := bytes.Split(b[:len(b)-1], []byte{0})
	count, err := strconv.Atoi(string(parts[0]))
	switch {
	case err != nil || count < 1 || strconv.Itoa(count) != string(parts[0]):
		return nil, errors.New("the command came malformed (no count)")
	case count != len(parts)-1:
		return nil, fmt.Errorf("the command came malformed: %d of the %d arguments came", len(parts)-1, count)
	case len(parts[1]) == 0:
		return nil, errors.New("the command came malformed (an empty name)")
	}
	argv := make([]string, count)
	for i, p := range parts[1:] {
		argv[i] = string(p)
	}
	return argv, nil
}

// ArgvWith wraps argv in the helper for what the run needs of it: the
// network plumbing net (nil: none) and the handles h. It is a pure
// function.
func ArgvWith(net *backends.NetPlumbing, h Handles, argv []string) []string {
	a := []string{BinaryPath}
	if h.Reap != "" {
		a = append(a, "--reap", h.Reap)
	}
	if h.Argv > 0 {
		a = append(a, "--argv-fd", strconv.Itoa(h.Argv))
	}
	if h.UnixGuard > 0 {
		a = append(a, "--unix-guard", strconv.Itoa(h.UnixGuard))
	}
	if tty := h.TTY; tty != nil {
		std := make([]string, len(tty.Std))
		for i, fd := range tty.Std {
			std[i] = strconv.Itoa(fd)
		}
		a = append(a, "--tty-fd", strconv.Itoa(tty.FD), "--tty-std", strings.Join(std, ","))
	}
	if net == nil {
		return append(append(a, "--"), argv...)
	}
	a = append(a,
		"--http", strconv.Itoa(HTTPPort),
		"--socks", strconv.Itoa(SOCKSPort),
		"--proxy-sock", MountDir+"/"+ProxySocket,
	)
	if h.Ports > 0 {
		a = append(a, "--ports-fd", strconv.Itoa(h.Ports))
	}
	for _, p := range net.Loopback {
		a = append(a, "--loopback", strconv.Itoa(p))
	}
	for _, p := range net.Listen {
		a = append(a, "--listen", fmt.Sprintf("%d=%s/%s", p, MountDir, ListenSocket(p)))
	}
	a = append(a, "--")
	return append(a, argv...)
}
