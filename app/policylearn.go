package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/app/policyfile"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/tracer"
)

// Learn mode: a command runs once, traced, in the widest sandbox the
// owner's policy allows its project (the project's own file does not
// narrow it), and what it really did (the files it read, the names and
// ports the proxy let it reach, how long it took) becomes the narrowest
// project policy under which it would have run. It never proposes what
// the owner's policy forbids: that is a note, "would need the owner to
// allow ...". The proposal only narrows, so saving it is always safe.

// reachedKind marks, in a learn run's reached list, a connection the
// proxy let through to this machine (a loopback rule) or elsewhere.
const (
	reachedLoopback = "loopback"
	reachedRemote   = "remote"
)

// proxyAllowed is the proxy's OnAllowed: the connection goes to the
// sandbox's learn runs.
func (e *Engine) proxyAllowed(id, host string, port int, loopback bool) {
	kind := reachedRemote
	if loopback {
		kind = reachedLoopback
	}
	e.reached.add(id, Refusal{Kind: kind, Host: host, Port: port})
}

// PolicyLearn runs req's command once in its project, traced, and
// proposes the narrowest policy for the project (with Write, saves it).
func (e *Engine) PolicyLearn(ctx context.Context, req PolicyLearnRequest) (*PolicyLearn, error) {
	owner, err := e.OwnerPolicy()
	if err != nil {
		return nil, asRefusal(err)
	}
	tenant := principal.Of(ctx).Tenant
	dir, err := e.checkTenantDir("projectDir", req.ProjectDir, tenant, true)
	if err != nil {
		return nil, err
	}
	current, err := projectLayer(dir)
	var pe *policyfile.Error
	if err != nil && !errors.As(err, &pe) {
		return nil, err // a broken file is replaced by the proposal
	}
	// The widest run the owner's policy allows the project.
	o := owner.File
	cfg := SandboxConfig{ProjectDir: &dir}
	if req.Backend != "" {
		cfg.Backend = &req.Backend
	}
	if len(o.AllowedDomains) > 0 {
		cfg.Domains = o.AllowedDomains
	}
	if o.Ports != nil {
		cfg.Listen, cfg.Connect, cfg.Loopback = o.Ports.Listen, o.Ports.Connect, o.Ports.Loopback
	}
	sb, err := e.newSandboxFor(tenant, cfg)
	if err != nil {
		return nil, err
	}
	sb.Kind, sb.Name = "oneshot", "learn"
	rreq := RunRequest{Source: SourceCLI, Command: req.Command, Argv: req.Argv, TimeoutMs: req.TimeoutMs, Trace: true}
	p, err := e.planFor(&sb, rreq)
	if err != nil {
		return nil, err
	}
	if err := e.takeUID(&sb); err != nil {
		return nil, err
	}
	p.kind, p.newWorkspace, p.learn = "oneshot", true, true
	res, err := e.run(ctx, p)
	defer func() {
		if res == nil || res.Record.State != "running" {
			e.purgeAfter(&sb)
		}
	}()
	if err != nil {
		return nil, err
	}
	events, err := e.Events(EventQuery{RunID: res.Record.ID, Limit: MaxEventsLimit})
	if err != nil {
		return nil, err
	}
	prop, notes := propose(owner.File, dir, sb.Workspace, &res.Record, events.Events, p.reached.result())
	out := &PolicyLearn{Run: res.Record, Stdout: res.Stdout, Stderr: res.Stderr, File: filepath.Join(dir, ProjectPolicyFile),
		Proposal: string(policyfile.Marshal(prop)), Notes: notes}
	var was policyfile.File
	if current != nil {
		was = current.File
	}
	out.Diff = diffPolicy(was, prop)
	if req.Write {
		if !res.Record.OK() {
			out.Notes = append(out.Notes, "not written: the learn run did not succeed, so the proposal may lack what the rest of it needs; fix the command and learn again")
		} else if err := writeProjectPolicy(dir, []byte(out.Proposal)); err != nil {
			return nil, err
		} else {
			out.Written = true
		}
	}
	return out, nil
}

// propose is the narrowest project policy under which the run would have
// done what it did: reads, reached names and ports, its time.
func propose(owner policyfile.File, project, workspace string, rec *RunRecord, events []StoredEvent, reached []Refusal) (policyfile.File, []string) {
	var notes []string
	f := policyfile.File{}
	// Reads: strict covers the project, the system roots and what lives
	// only inside the sandbox (/proc, /dev, its /tmp); anything else needs
	// the allowlist (each file's folder) or the open mode.
	var outside []string
	for _, ev := range events {
		if ev.Kind != tracer.KindRead {
			continue
		}
		// A folded root reads "/usr (N reads)": its path comes first.
		fields := strings.Fields(ev.Target)
		if len(fields) == 0 {
			continue
		}
		p := filepath.Clean(fields[0])
		if !filepath.IsAbs(p) || within(p, project) || within(p, workspace) || strictReadable(p) {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			continue // only inside the sandbox
		}
		if d := filepath.Dir(canonical(p)); !slices.Contains(outside, d) {
			outside = append(outside, d)
		}
	}
	slices.Sort(outside)
	allow := make([]string, len(owner.Allowlist))
	for i, a := range owner.Allowlist {
		allow[i] = canonical(a)
	}
	switch {
	case len(outside) == 0:
		f.FsMode = string(backends.FsStrict)
	case !slices.ContainsFunc(outside, func(d string) bool { return !policyfile.Covered(d, allow) }) && owner.FsMode != string(backends.FsStrict):
		f.FsMode, f.Allowlist = string(backends.FsAllowlist), outside
	case owner.FsMode == string(backends.FsOpen):
		f.FsMode = string(backends.FsOpen)
	default:
		f.FsMode = owner.FsMode
		notes = append(notes, fmt.Sprintf("it read %s, outside what fs mode %s reads: that would need the owner to allow it (the allowlist or fs mode of %s)", strings.Join(outside, ", "), owner.FsMode, "the owner's policy"))
	}
	// What the proxy let through.
	var domains []string
	loopback, connect := []int{}, []int{}
	remote := false
	for _, r := range reached {
		switch r.Kind {
		case reachedLoopback:
			if !slices.Contains(loopback, r.Port) {
				loopback = append(loopback, r.Port)
			}
		case reachedRemote:
			remote = true
			if !slices.Contains(connect, r.Port) {
				connect = append(connect, r.Port)
			}
			if _, err := netip.ParseAddr(strings.Trim(r.Host, "[]")); err != nil && !slices.Contains(domains, r.Host) {
				domains = append(domains, r.Host)
			}
		}
	}
	slices.Sort(loopback)
	slices.Sort(connect)
	slices.Sort(domains)
	f.Network = &remote
	if remote && len(domains) > 0 {
		f.AllowedDomains = domains
	}
	f.Ports = &policyfile.Ports{Loopback: loopback, Connect: connect, Listen: []int{}}
	if !remote {
		f.Ports.Connect = nil
	}
	for _, r := range rec.Refusals {
		if r.Kind == RefusedConnect || r.Kind == RefusedHTTP {
			how := r.Allow
			if how == "" {
				how = r.Rule
			}
			notes = append(notes, fmt.Sprintf("refused during the run: %s: that would need the owner to allow it (%s)", r.Line(), how))
		}
	}
	// Time with headroom: three times what it took, in whole seconds,
	// at least 10 s, at most the owner's.
	t := max(10000, ((int(rec.DurationMs)*3+999)/1000)*1000)
	if owner.Limits != nil && owner.Limits.TimeoutMs != nil && t > *owner.Limits.TimeoutMs {
		t = *owner.Limits.TimeoutMs
	}
	f.Limits = &policyfile.Limits{TimeoutMs: &t}
	notes = append(notes, "memory, CPU and processes are not measured by a learn run: the owner's limits hold")
	if rec.TimedOut || !rec.OK() {
		notes = append(notes, "the learn run did not succeed: what the rest of the command would need is not in the proposal")
	}
	return f, notes
}

// strictReadable reports whether the strict mode reads p: the system
// roots and what each sandbox has of its own.
func strictReadable(p string) bool {
	for _, root := range append(backends.SystemRoots(), "/proc", "/dev", "/sys", "/tmp", "/run") {
		if within(p, root) {
			return true
		}
	}
	return false
}

// diffPolicy is the proposal against the file as it is, key by key.
func diffPolicy(was, now policyfile.File) []string {
	flat := func(f policyfile.File) map[string]string {
		var m map[string]any
		_ = json.Unmarshal(policyfile.Marshal(f), &m)
		out := map[string]string{}
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				for sk, sv := range sub {
					data, _ := json.Marshal(sv)
					out[k+"."+sk] = string(data)
				}
				continue
			}
			data, _ := json.Marshal(v)
			out[k] = string(data)
		}
		return out
	}
	a, b := flat(was), flat(now)
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	diff := []string{}
	for _, k := range keys {
		if a[k] == b[k] {
			continue
		}
		if v, ok := a[k]; ok {
			diff = append(diff, "- "+k+": "+v)
		}
		if v, ok := b[k]; ok {
			diff = append(diff, "+ "+k+": "+v)
		}
	}
	return diff
}

// writeProjectPolicy writes data as dir's policy file through dir (no
// link followed below it), a temporary file renamed over the old one.
func writeProjectPolicy(dir string, data []byte) error {
	d, err := jailfs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("opening the project %s: %w", dir, err)
	}
	defer d.Close()
	folder, base := path.Split(ProjectPolicyFile)
	folder = strings.TrimSuffix(folder, "/")
	if err := d.MkdirAll(folder, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", filepath.Join(dir, folder), err)
	}
	switch e, err := d.Lstat(ProjectPolicyFile); {
	case err == nil && !e.Mode.IsRegular():
		return fmt.Errorf("%s is not a regular file (a link?): senclaw writes a project's policy only as a file of its own", filepath.Join(dir, ProjectPolicyFile))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	var suffix [6]byte
	rand.Read(suffix[:])
	tmp := path.Join(folder, "."+base+".senclaw-"+hex.EncodeToString(suffix[:]))
	f, err := d.Open(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.Rename(tmp, ProjectPolicyFile)
	}
	if err != nil {
		_ = d.RemoveAll(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, ProjectPolicyFile), err)
	}
	return nil
}

// PolicyApply saves text, a proposal of PolicyLearn (or any policy), as
// the project's .senclaw/policy.json: the dashboard's Apply. It is
// checked as a run would read it first; a broken one is refused with its
// line and column and changes nothing. It can only narrow the owner's
// policy, as every project file.
func (e *Engine) PolicyApply(ctx context.Context, req PolicyApplyRequest) (*PolicyCheck, error) {
	dir, err := e.checkTenantDir("projectDir", req.ProjectDir, principal.Of(ctx).Tenant, true)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ProjectPolicyFile)
	if _, err := policyfile.Parse(path, []byte(req.Policy)); err != nil {
		return nil, badField("policy", nil, "%s", err.Error())
	}
	if err := writeProjectPolicy(dir, []byte(req.Policy)); err != nil {
		return nil, err
	}
	return e.PolicyCheck(ctx, PolicyCheckRequest{ProjectDir: dir})
}
