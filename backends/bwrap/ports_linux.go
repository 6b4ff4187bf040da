package bwrap

import (
	"context"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
)

// offerPrivilegedPorts prepares the binding of spec's loopback ports
// below 1024, which the forwarder cannot bind in the sandbox's network
// namespace and the engine binds for it (netfwd.PortsHandoff); nil when
// there are none.
func offerPrivilegedPorts(spec *backends.Spec) (*netfwd.PortsHandoff, error) {
	if spec.Net == nil {
		return nil, nil
	}
	low := netfwd.PrivilegedLoopback(spec.Net.Loopback)
	if len(low) == 0 {
		return nil, nil
	}
	h, err := netfwd.NewPortsHandoff(low)
	if err != nil {
		return nil, &RefusedError{Reason: err.Error()}
	}
	return h, nil
}

// bindPrivilegedPorts binds the forwarder's sockets for the loopback
// ports below 1024. On failure the run must end; the error says why.
func bindPrivilegedPorts(ctx context.Context, h *netfwd.PortsHandoff, childPid int, p *process) error {
	if err := h.Bind(ctx, childPid, p.done); err != nil {
		_ = p.Kill()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
		return &RefusedError{Reason: "the loopback ports below 1024 could not be opened in the sandbox: " + err.Error()}
	}
	return nil
}
