// Package netfwd is the in-sandbox half of SenClaw's network plumbing on
// Linux. A sandbox has its own network namespace with nothing but loopback;
// the tiny forwarder (cmd/senclaw-netfwd, a static binary built from Run)
// wraps the sandboxed command and, inside that namespace, listens on
// loopback for the proxy ports and relays each connection over a Unix
// socket to the engine's egress proxy, which applies the sandbox's rules.
// It also serves the sandbox's listen ports on Unix sockets so that the
// engine can forward 127.0.0.1:P on the host into the namespace.
//
// Argv builds the wrapped command line (a pure function the backends use);
// Run is the forwarder itself.
package netfwd

import (
	"fmt"
	"strconv"

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

// Argv wraps argv in the forwarder as seen inside the sandbox: the
// forwarder opens its listeners, then runs argv as its child and ends
// with it. It is a pure function.
func Argv(net *backends.NetPlumbing, argv []string) []string {
	a := []string{BinaryPath,
		"--http", strconv.Itoa(HTTPPort),
		"--socks", strconv.Itoa(SOCKSPort),
		"--proxy-sock", MountDir + "/" + ProxySocket,
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

// GuardedArgv is Argv that also has the forwarder load the Unix socket
// guard and hand it to the engine over the inherited descriptor fd
// before anything else (backends/unixguard). With net nil the forwarder
// forwards nothing and becomes the command once the guard is in place.
func GuardedArgv(net *backends.NetPlumbing, fd int, argv []string) []string {
	guard := []string{BinaryPath, "--unix-guard", strconv.Itoa(fd)}
	if net == nil {
		return append(append(guard, "--"), argv...)
	}
	return append(guard, Argv(net, argv)[1:]...)
}
