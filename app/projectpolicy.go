package app

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/app/policyfile"
	"github.com/senclaw/sandbox/backends"
)

// agentBase is the owner's layer as it holds for the agent shell: the
// exec policy's fs mode, network and loopback, and the limits of the
// agent's project sandbox.
func agentBase(l policyfile.Layer) policyfile.Layer {
	f := l.File
	a := f.AgentShell
	f.FsMode, f.Network = a.FsMode, a.Network
	ports := policyfile.Ports{}
	if f.Ports != nil {
		ports = *f.Ports
	}
	ports.Loopback = a.Loopback
	f.Ports = &ports
	cpus, mem, pids, timeout, disk := 4.0, 4096, 256, 180000, 0
	f.Limits = &policyfile.Limits{CPUs: &cpus, MemoryMB: &mem, Pids: &pids, TimeoutMs: &timeout, DiskMB: &disk}
	return policyfile.Layer{Path: l.Path, File: f}
}

// effectivePolicy merges dir's policy file (if any) over base. project
// is nil when dir has none.
func effectivePolicy(dir string, base policyfile.Layer) (policyfile.Effective, *policyfile.Layer, error) {
	project, err := projectLayer(dir)
	if err != nil {
		return policyfile.Effective{}, nil, err
	}
	return policyfile.Merge(base, project), project, nil
}

// asRefusal makes a broken policy file a refusal of the run it governs.
func asRefusal(err error) error {
	var pe *policyfile.Error
	if errors.As(err, &pe) {
		return refused("%s", pe.Error())
	}
	return err
}

// narrowed says which of a sandbox's values an effective policy bounds:
// those the project's file decided and the owner's keys that only the
// file holds (domains, HTTP rules, ports, env, secrets), when set.
func narrowed(eff policyfile.Effective, owner policyfile.File) func(key string) bool {
	return func(key string) bool {
		if eff.Decided[key] {
			return true
		}
		switch key {
		case "allowedDomains":
			return len(owner.AllowedDomains) > 0
		case "httpRules":
			return len(owner.HTTPRules) > 0
		case "ports.listen", "ports.connect", "ports.loopback":
			return owner.Ports != nil
		case "env":
			return owner.Env != nil
		case "secrets":
			return owner.Secrets != nil
		}
		return false
	}
}

// narrowSandbox bounds sb by the effective policy (bound says which keys
// hold) and returns a note for each value the request asked for that it
// took down. allow is the settings' allowlist, canonical.
func narrowSandbox(sb *Sandbox, env map[string]string, eff policyfile.Effective, bound func(string) bool, allow []string, asked SandboxConfig) []string {
	var notes []string
	f := eff.File
	say := func(format string, a ...any) { notes = append(notes, fmt.Sprintf(format, a...)) }
	// Only what the request asked for is worth a note: a default the
	// project's file narrows is its value, which the check shows.
	sayIf := func(given bool) func(string, ...any) {
		if given {
			return say
		}
		return func(string, ...any) {}
	}
	if bound("fsMode") && policyfile.FsWider(string(sb.FsMode), f.FsMode) {
		sayIf(asked.FsMode != nil)("fs mode %s narrowed to %s by the project's policy", sb.FsMode, f.FsMode)
		sb.FsMode = backends.FsMode(f.FsMode)
	}
	if bound("allowlist") {
		// Canonical, and still within the settings' allowlist: a link in
		// a project's entry leads nowhere the owner did not allow.
		list := []string{}
		for _, p := range f.Allowlist {
			if real := canonical(p); policyfile.Covered(real, allow) && !slices.Contains(list, real) {
				list = append(list, real)
			} else if !policyfile.Covered(real, allow) {
				say("allowlist entry %s (%s) left out: it leads outside the owner's allowlist", p, real)
			}
		}
		sb.Allowlist = list
	}
	if bound("network") && !deref(f.Network) && sb.Network {
		sayIf(asked.Network != nil)("network turned off by the project's policy")
		sb.Network = false
	}
	if bound("allowedDomains") && len(f.AllowedDomains) > 0 {
		if len(sb.Ports.Domains) == 0 {
			sb.Ports.Domains = slices.Clone(f.AllowedDomains)
		} else {
			var keep []string
			for _, d := range sb.Ports.Domains {
				if policyfile.DomainCovered(d, f.AllowedDomains) {
					keep = append(keep, d)
				} else {
					say("domain %s left out: the policy allows only %s", d, strings.Join(f.AllowedDomains, ", "))
				}
			}
			if len(keep) == 0 {
				say("network turned off: none of the domains asked for is allowed by the policy")
				sb.Network, keep = false, slices.Clone(f.AllowedDomains)
			}
			sb.Ports.Domains = keep
		}
	}
	if bound("httpRules") {
		// The run's own rules (a --here request's, those saved on the
		// agent shell's sandbox) only narrow the policy's, host by host,
		// as a project's narrow the owner's.
		var dropped []string
		sb.Ports.AllowHTTP, dropped = policyfile.NarrowHTTP(f.HTTPRules, sb.Ports.AllowHTTP)
		notes = append(notes, dropped...)
	}
	ports := policyfile.Ports{}
	if f.Ports != nil {
		ports = *f.Ports
	}
	sb.Ports.Listen = boundPorts(bound("ports.listen"), asked.Listen != nil, "listen", sb.Ports.Listen, ports.Listen, false, say)
	sb.Ports.Connect = boundPorts(bound("ports.connect"), asked.Connect != nil, "connect", sb.Ports.Connect, ports.Connect, true, say)
	sb.Ports.Loopback = boundPorts(bound("ports.loopback"), asked.Loopback != nil, "loopback", sb.Ports.Loopback, ports.Loopback, false, say)
	if bound("ports.connect") && ports.Connect != nil && len(sb.Ports.Connect) == 0 && sb.Network {
		// No connect list is any port to the proxy: a policy's list with
		// none left is no egress at all (fail closed).
		say("network turned off: the policy allows no connect port the run may use")
		sb.Network = false
	}
	if l := f.Limits; l != nil {
		if bound("limits.cpus") && l.CPUs != nil && sb.CPUs > *l.CPUs {
			sayIf(asked.CPUs != nil)("cpus %g narrowed to %g by the project's policy", sb.CPUs, *l.CPUs)
			sb.CPUs = *l.CPUs
		}
		boundLimit(bound("limits.memoryMb"), "memoryMb", &sb.MemoryMB, l.MemoryMB, sayIf(asked.MemoryMB != nil))
		boundLimit(bound("limits.pids"), "pids", &sb.Pids, l.Pids, sayIf(asked.Pids != nil))
		boundLimit(bound("limits.timeoutMs"), "timeoutMs", &sb.TimeoutMs, l.TimeoutMs, sayIf(asked.TimeoutMs != nil))
		if bound("limits.diskMb") && l.DiskMB != nil && *l.DiskMB > 0 && (sb.DiskMB == 0 || sb.DiskMB > *l.DiskMB) && sb.OwnWorkspace {
			sb.DiskMB = *l.DiskMB
		}
	}
	if bound("env") {
		for _, m := range []map[string]string{sb.Env, env} {
			for _, k := range sortedKeys(m) {
				if !slices.Contains(f.Env, k) {
					say("environment variable %s left out: the policy's env does not list it", k)
					delete(m, k)
				}
			}
		}
	}
	if bound("secrets") {
		var keep []string
		for _, s := range sb.Secrets {
			if slices.Contains(f.Secrets, s) {
				keep = append(keep, s)
			} else {
				say("secret %s left out: the policy's secrets do not list it", s)
			}
		}
		if sb.Secrets != nil {
			sb.Secrets = keep
		}
	}
	return notes
}

// boundPorts is a port list under the policy's: the request's (given),
// each port the policy does not allow left out with a note, or else the
// policy's own. anyIfNil: no list is any port (connect).
func boundPorts(bound, given bool, name string, have, allowed []int, anyIfNil bool, say func(string, ...any)) []int {
	switch {
	case !bound:
		return have
	case !given:
		return slices.Clone(allowed)
	case anyIfNil && allowed == nil:
		return have
	case anyIfNil && len(have) == 0:
		return slices.Clone(allowed) // the request's any port, bounded
	}
	keep := []int{}
	for _, p := range have {
		if slices.Contains(allowed, p) {
			keep = append(keep, p)
		} else {
			say("%s port %d left out: the policy does not allow it", name, p)
		}
	}
	return keep
}

func boundLimit(bound bool, name string, have *int, most *int, say func(string, ...any)) {
	if bound && most != nil && *most > 0 && *have > *most {
		say("%s %d narrowed to %d by the project's policy", name, *have, *most)
		*have = *most
	}
}

func deref(b *bool) bool { return b != nil && *b }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// applyProjectPolicy bounds sb, a sandbox whose writable folder is a
// project (its workspace), and env, the run's environment, by the
// project's effective policy: the owner's layer (for the agent shell,
// agentBase of it) narrowed by the project's file. It returns the notes
// for the run's record: the file's ignored keys, then what it took down
// of what the request asked for (asked).
func (e *Engine) applyProjectPolicy(sb *Sandbox, env map[string]string, agent bool, asked SandboxConfig) ([]string, error) {
	owner, err := e.OwnerPolicy()
	if err != nil {
		return nil, err
	}
	base := owner
	if agent {
		base = agentBase(owner)
	}
	eff, project, err := effectivePolicy(sb.Workspace, base)
	if err != nil {
		return nil, err
	}
	bound := narrowed(eff, owner.File)
	if project == nil && !slices.ContainsFunc([]string{"allowedDomains", "httpRules", "ports.listen", "env", "secrets"}, bound) {
		return nil, nil
	}
	allow := make([]string, len(owner.File.Allowlist))
	for i, p := range owner.File.Allowlist {
		allow[i] = canonical(p)
	}
	return append(eff.Notes, narrowSandbox(sb, env, eff, bound, allow, asked)...), nil
}
