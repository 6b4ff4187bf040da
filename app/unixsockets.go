package app

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// The Unix socket guard: a sandbox's network namespace does
// not cover pathname Unix sockets, so every bwrap run is started with
// backends/unixguard, which lets it reach only the sockets in its own
// places, the engine's proxy and the settings' allowedSockets.

const noForwarderGuard = "every bwrap run needs the in-sandbox forwarder senclaw-netfwd, which loads the Unix socket guard before the command (and relays the network when it is on), and no forwarder was found next to the senclaw executable or on PATH (one in a folder another user may write is passed over, and the engine's log says so); build it with `make build`, or `CGO_ENABLED=0 go build -o senclaw-netfwd ./backends/netfwd/cmd/senclaw-netfwd` and put it next to senclaw"

// guardUnixSockets gives a bwrap run the Unix socket guard. Without the
// forwarder the run is refused; on a kernel that cannot run the guard it
// goes on, and missing says so for the record.
func (e *Engine) guardUnixSockets(b backends.Backend, spec *backends.Spec) (missing string, err error) {
	if b.Name() != "bwrap" {
		return "", nil
	}
	if ok, why := unixguard.Available(); !ok {
		return "unix sockets: not guarded, " + why + ": pathname Unix sockets the sandbox can see are reachable from it", nil
	}
	fwd, err := e.forwarder(b, spec.User, noForwarderGuard)
	if err != nil {
		return "", err
	}
	spec.UnixGuard = &backends.UnixGuard{Forwarder: fwd, Sockets: e.Settings().AllowedSockets}
	return "", nil
}

// forwarder returns the forwarder's path if it is there and, for bwrap,
// reachable by the sandbox user; otherwise a refusal with missing.
func (e *Engine) forwarder(b backends.Backend, user *backends.Credential, missing string) (string, error) {
	fwd := e.opts.Forwarder
	if fwd == "" {
		return "", refused("%s", missing)
	}
	if fi, err := os.Stat(fwd); err != nil || fi.IsDir() {
		return "", refused("%s (looked at %s)", missing, fwd)
	}
	if b.Name() == "bwrap" && user != nil {
		if err := reachable(fwd, *user); err != nil {
			return "", refused("the forwarder %s: %v", fwd, err)
		}
	}
	return fwd, nil
}

// checkAllowedSockets validates the settings' allowedSockets: socket
// paths the guard lets every sandbox reach (unixguard.CheckNamed), none
// of the engine's own (its API, the sandboxes' proxy sockets) and none in
// the folders that are never given to a sandbox.
func (e *Engine) checkAllowedSockets(list []string) ([]string, error) {
	out := []string{}
	for i, p := range list {
		field := fmt.Sprintf("allowedSockets[%d]", i)
		if err := unixguard.CheckNamed(p); err != nil {
			return nil, badField(field, p, "%v", err)
		}
		for _, prot := range e.paths.protected() {
			if within(p, prot) || within(canonical(p), prot) {
				return nil, badField(field, p, "is in %s, which is private to senclaw or to you and never opened to a sandbox", prot)
			}
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// unixSocketNote says in words which Unix sockets sandboxes of backend
// reach; "" where nothing is to say (direct enforces nothing at all).
func (e *Engine) unixSocketNote(backend string) string {
	switch backend {
	case "bwrap":
		if ok, why := unixguard.Available(); !ok {
			return "Unix sockets: NOT GUARDED, " + why + ": pathname Unix sockets the sandbox can see are reachable from it (in open mode any world-writable one outside /run; in every mode those in its mounts and allowlisted folders)"
		}
		named := "none"
		if s := e.Settings().AllowedSockets; len(s) > 0 {
			named = strings.Join(s, ", ")
		}
		return "Unix sockets: connect() is checked by the engine; of the pathname sockets only those in the sandbox's workspace (not in its mounts) and private /tmp, the engine's proxy, and the settings' allowedSockets (" + named + ") are reachable, others get EACCES; links are not followed, and Unix datagram sockets cannot be made"
	case "docker":
		return "Unix sockets: a container sees only its image, the workspace and its mounts; sockets in those are reachable"
	}
	return ""
}
