package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// MountResult is the answer of AddMount.
type MountResult struct {
	Mount backends.Mount `json:"mount"`
	// At is where the folder appears inside the sandbox.
	At string `json:"at"`
	// Note says when the change takes effect.
	Note string `json:"note"`
}

// AddMount gives the sandbox a host folder at target (relative to its
// workspace). The same checks as on create apply.
func (e *Engine) AddMount(id string, m backends.Mount) (*MountResult, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	next := append(slices.Clone(sb.Mounts), m)
	up, err := e.Update(id, SandboxConfig{Mounts: next})
	if err != nil {
		var fe *FieldError
		if asField(err, &fe) {
			fe.Field = strings.Replace(fe.Field, fmt.Sprintf("mounts[%d].", len(next)-1), "", 1)
		}
		return nil, err
	}
	added := up.Mounts[len(up.Mounts)-1]
	return &MountResult{Mount: added, At: up.Workspace + "/" + added.Target, Note: e.changeNote(up)}, nil
}

// RemoveMount takes the mount at target away. The host folder is not
// touched.
func (e *Engine) RemoveMount(id, target string) (*Sandbox, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(sb.Mounts, func(m backends.Mount) bool { return m.Target == strings.Trim(target, "/") })
	if i < 0 {
		return nil, badField("target", target, "is not a mount of this sandbox")
	}
	next := slices.Delete(slices.Clone(sb.Mounts), i, i+1)
	return e.Update(id, SandboxConfig{Mounts: next})
}

// SetFsMode changes what the sandbox may read.
func (e *Engine) SetFsMode(id, mode string) (*Sandbox, error) {
	return e.Update(id, SandboxConfig{FsMode: &mode})
}

// PortsResult is the answer of SetPorts.
type PortsResult struct {
	Sandbox     *Sandbox           `json:"sandbox"`
	Ports       backends.PortRules `json:"ports"`
	ReachableAt []string           `json:"reachableAt"`
	// Note says precisely what is and is not enforced, and by what.
	Note string `json:"note"`
}

// SetPorts replaces the sandbox's port rules: each list replaces the old
// one, and an omitted (nil) list means empty.
func (e *Engine) SetPorts(ctx context.Context, id string, listen, connect, loopback []int) (*PortsResult, error) {
	if listen == nil {
		listen = []int{}
	}
	if connect == nil {
		connect = []int{}
	}
	if loopback == nil {
		loopback = []int{}
	}
	sb, err := e.Update(id, SandboxConfig{Listen: listen, Connect: connect, Loopback: loopback})
	if err != nil {
		return nil, err
	}
	res := &PortsResult{Sandbox: sb, Ports: sb.Ports, ReachableAt: []string{}}
	for _, p := range sb.Ports.Listen {
		res.ReachableAt = append(res.ReachableAt, fmt.Sprintf("127.0.0.1:%d", p))
	}
	res.Note = e.networkNote(ctx, sb)
	return res, nil
}

// networkNote says in words what the sandbox's network rules get from its
// backend. It is honest about what is not enforced.
func (e *Engine) networkNote(ctx context.Context, sb *Sandbox) string {
	backend := sb.Backend
	if backend == "" {
		if b, _ := e.probes.best(ctx); b != nil {
			backend = b.Name()
		}
	}
	wants := sb.Network || !sb.Ports.Empty()
	switch {
	case backend == "direct":
		return "the direct backend enforces nothing: network and port rules are advisory only"
	case !wants:
		return "network off: the sandbox has its own network namespace with no route out and cannot reach this machine's services"
	case backend == "bwrap":
		return "bwrap shares this machine's network namespace when the network is on or ports are listed: listen ports bind directly on the host, and neither connect nor loopback rules are enforced yet (the egress proxy will enforce them)"
	case backend == "docker":
		return "docker uses a bridge network when the network is on or ports are listed: listen ports are published on 127.0.0.1 only; connect and loopback rules are not enforced yet (the egress proxy will enforce them)"
	}
	return "no isolating backend is available; runs are refused"
}

// CreateNote says what a new sandbox gets, in words: when it starts and
// what its network rules get from its backend.
func (e *Engine) CreateNote(ctx context.Context, sb *Sandbox) string {
	start := "each run starts its own isolated process"
	if sb.Backend == "docker" {
		start = "the container starts on the first run"
	}
	return start + "; " + e.networkNote(ctx, sb)
}

// ChangeNote says when a configuration change takes effect.
func (e *Engine) ChangeNote(sb *Sandbox) string { return e.changeNote(sb) }

// changeNote says when a configuration change takes effect.
func (e *Engine) changeNote(sb *Sandbox) string {
	if sb.Backend == "docker" {
		return "the container is recreated before its next run (workspace files are kept)"
	}
	return "takes effect on the next run; runs already going keep what they started with"
}

func asField(err error, target **FieldError) bool {
	fe, ok := err.(*FieldError)
	if ok {
		*target = fe
	}
	return ok
}
