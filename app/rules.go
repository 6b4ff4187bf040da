package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

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
		if errors.As(err, &fe) {
			fe.Field = strings.Replace(fe.Field, fmt.Sprintf("mounts[%d].", len(next)-1), "", 1)
		}
		return nil, err
	}
	added := up.Mounts[len(up.Mounts)-1]
	return &MountResult{Mount: added, At: up.Workspace + "/" + added.Target, Notes: e.ChangeNotes(context.Background(), up)}, nil
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

// SetPorts replaces the sandbox's port rules: each list replaces the old
// one, and an omitted (nil) list means empty. Domain lists stay as they
// are; SetPortRules replaces them too.
func (e *Engine) SetPorts(ctx context.Context, id string, listen, connect, loopback []int) (*PortsResult, error) {
	sb, err := e.Get(id)
	if err != nil {
		return nil, err
	}
	return e.SetPortRules(ctx, id, backends.PortRules{Listen: listen, Connect: connect, Loopback: loopback,
		Domains: sb.Ports.Domains, DenyDomains: sb.Ports.DenyDomains, AllowHTTP: sb.Ports.AllowHTTP})
}

// SetPortRules replaces all of the sandbox's network rules: ports, domain
// lists and HTTP rules, each list replacing the old one (nil means
// empty).
// Connect, loopback and domain changes apply to the next connection of
// runs already going; listen ports from the next run.
func (e *Engine) SetPortRules(ctx context.Context, id string, r backends.PortRules) (*PortsResult, error) {
	orEmpty := func(l []int) []int {
		if l == nil {
			return []int{}
		}
		return l
	}
	names := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	web := r.AllowHTTP
	if web == nil {
		web = []backends.HTTPRule{}
	}
	sb, err := e.Update(id, SandboxConfig{Listen: orEmpty(r.Listen), Connect: orEmpty(r.Connect), Loopback: orEmpty(r.Loopback),
		Domains: names(r.Domains), DenyDomains: names(r.DenyDomains), AllowHTTP: web})
	if err != nil {
		return nil, err
	}
	res := &PortsResult{Sandbox: sb, Ports: sb.Ports, ReachableAt: []string{}}
	for _, p := range sb.Ports.Listen {
		res.ReachableAt = append(res.ReachableAt, fmt.Sprintf("127.0.0.1:%d", p))
	}
	res.Notes = e.networkNotes(sb, e.noteBackend(ctx, sb))
	return res, nil
}
