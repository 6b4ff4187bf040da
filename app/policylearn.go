package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/app/apitype"
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
// reachedRequest an HTTP request the proxy looked into and sent on.
const (
	reachedLoopback = "loopback"
	reachedRemote   = "remote"
	reachedRequest  = "request"
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

// proxyRequested is the proxy's OnRequest: the request goes to the
// sandbox's learn runs.
func (e *Engine) proxyRequested(id, host string, port int, method, path string) {
	e.reached.add(id, Refusal{Kind: reachedRequest, Host: host, Port: port, Method: method, Path: path})
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
	// The owner's HTTP rules and secrets: the proxy looks into their
	// hosts, so the requests sent there are seen (and proposed).
	if len(o.HTTPRules) > 0 {
		cfg.AllowHTTP = o.HTTPRules
	}
	if o.Secrets != nil {
		cfg.Secrets = o.Secrets
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
	prop, notes := propose(owner.File, dir, sb.Workspace, &res.Record, events.Events, p.reached.result(), p.usage.peak())
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
func propose(owner policyfile.File, project, workspace string, rec *RunRecord, events []StoredEvent, reached []Refusal, used learnPeak) (policyfile.File, []string) {
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
	f.HTTPRules, notes = proposeHTTP(reached, notes)
	var listen []int
	listen, notes = proposeListen(owner, events, notes)
	f.Ports = &policyfile.Ports{Loopback: loopback, Connect: connect, Listen: listen}
	if !remote {
		f.Ports.Connect = nil
	}
	notes = noteSockets(events, notes)
	for _, r := range rec.Refusals {
		if r.Kind == RefusedConnect || r.Kind == RefusedHTTP || r.Kind == RefusedUnix {
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
	f.Limits.MemoryMB, notes = proposeMemory(owner, used, notes)
	if used.Tasks > 0 {
		notes = append(notes, fmt.Sprintf("processes: it ran at most %d processes and threads at once; no pids limit is proposed (without a cgroup one counts every process of the user's), so the owner's holds", used.Tasks))
	}
	notes = append(notes, "CPU: no limit is proposed (one slows a run rather than stops it): the owner's holds")
	if rec.TimedOut || !rec.OK() {
		notes = append(notes, "the learn run did not succeed: what the rest of the command would need is not in the proposal")
	}
	return f, notes
}

// maxProposedPaths is how many paths a proposed HTTP rule names before
// they are folded into their folders.
const maxProposedPaths = 8

// proposeHTTP is an HTTP rule per host the proxy looked into: the
// methods and paths the run sent (folded into their folders when there
// are many). A host's rules in a project's file narrow the owner's for
// it only when they are within them, which what passed the owner's
// rules is.
func proposeHTTP(reached []Refusal, notes []string) ([]backends.HTTPRule, []string) {
	type seen struct{ methods, paths []string }
	byHost := map[string]*seen{}
	var hosts []string
	cut := false
	for _, r := range reached {
		if r.Kind == apitype.RefusedMore {
			cut = true
		}
		if r.Kind != reachedRequest {
			continue
		}
		host := r.Host
		if r.Port != 443 && r.Port != 80 {
			host = net.JoinHostPort(strings.Trim(r.Host, "[]"), strconv.Itoa(r.Port))
		}
		s := byHost[host]
		if s == nil {
			s = &seen{}
			byHost[host] = s
			hosts = append(hosts, host)
		}
		if !slices.Contains(s.methods, r.Method) {
			s.methods = append(s.methods, r.Method)
		}
		if !slices.Contains(s.paths, r.Path) {
			s.paths = append(s.paths, r.Path)
		}
	}
	slices.Sort(hosts)
	var rules []backends.HTTPRule
	for _, h := range hosts {
		s := byHost[h]
		slices.Sort(s.methods)
		paths := foldPaths(s.paths)
		if cut {
			// Not every request was kept: any path of the methods seen.
			paths = nil
			notes = append(notes, fmt.Sprintf("%s: more requests were sent than learn mode keeps, so its rule names the methods seen and any path", h))
		}
		rules = append(rules, backends.HTTPRule{Host: h, Methods: s.methods, Paths: paths})
	}
	return rules, notes
}

// foldPaths keeps up to maxProposedPaths paths; more are folded into
// their parent folders ("/v1/items/1", "/v1/items/2" into "/v1/items/")
// until they fit, or none (any path) is left.
func foldPaths(paths []string) []string {
	out := slices.Clone(paths)
	for len(out) > maxProposedPaths {
		var next []string
		for _, p := range out {
			dir := p
			if i := strings.LastIndexByte(strings.TrimSuffix(p, "/"), '/'); i >= 0 {
				dir = p[:i+1]
			}
			if !slices.Contains(next, dir) {
				next = append(next, dir)
			}
		}
		if slices.Equal(next, out) || slices.Contains(next, "/") {
			return nil
		}
		out = next
	}
	// A path below another is already allowed by it.
	slices.Sort(out)
	keep := out[:0]
	for _, p := range out {
		if len(keep) == 0 || !strings.HasPrefix(p, keep[len(keep)-1]) || !strings.HasSuffix(keep[len(keep)-1], "/") {
			keep = append(keep, p)
		}
	}
	return keep
}

// proposeListen is the ports the run listened on that the owner's
// policy lets a sandbox listen on; a port it does not is said, not
// proposed (the server was reachable only inside its sandbox, or its
// bind was refused).
func proposeListen(owner policyfile.File, events []StoredEvent, notes []string) ([]int, []string) {
	var allowed []int
	if owner.Ports != nil {
		allowed = owner.Ports.Listen
	}
	listen := []int{}
	var outside []string
	for _, ev := range events {
		bound := ev.Kind == tracer.KindListen
		refused := ev.Kind == tracer.KindDenied && strings.HasPrefix(ev.Detail, "bind:")
		if !bound && !refused {
			continue
		}
		_, ps, err := net.SplitHostPort(ev.Target)
		port, perr := strconv.Atoi(ps)
		if err != nil || perr != nil || port <= 0 {
			continue
		}
		switch {
		case slices.Contains(allowed, port) && !slices.Contains(listen, port):
			listen = append(listen, port)
		case !slices.Contains(allowed, port) && !slices.Contains(outside, ps):
			outside = append(outside, ps)
		}
	}
	slices.Sort(listen)
	if len(outside) > 0 {
		notes = append(notes, fmt.Sprintf("it listened on port %s, which the owner's policy does not list as a listen port: reachable only inside its sandbox (or refused); to reach it from this machine that would need the owner to allow it (ports.listen)", strings.Join(outside, ", ")))
	}
	return listen, notes
}

// noteSockets says which Unix sockets the run connected to: a project's
// file cannot name sockets (allowedSockets is the owner's alone), so a
// socket is a note: allowed by the owner's policy, or would need it.
func noteSockets(events []StoredEvent, notes []string) []string {
	var ok, refused []string
	for _, ev := range events {
		name, isUnix := strings.CutPrefix(ev.Target, "unix:")
		if !isUnix || ev.Kind != tracer.KindConnect && ev.Kind != tracer.KindDenied {
			continue
		}
		list := &ok
		if ev.Kind == tracer.KindDenied {
			list = &refused
		}
		if !slices.Contains(*list, name) {
			*list = append(*list, name)
		}
	}
	if len(ok) > 0 {
		notes = append(notes, "it connected to the Unix sockets "+strings.Join(ok, ", ")+"; sockets are the owner's to allow (allowedSockets), not a project's")
	}
	if len(refused) > 0 {
		notes = append(notes, "it was refused the Unix sockets "+strings.Join(refused, ", ")+": that would need the owner to allow them (allowedSockets)")
	}
	return notes
}

// proposeMemory is a memory limit with headroom over what the run used:
// twice the most its processes held resident at once, or a quarter more
// than the most data one of them had (what RLIMIT_DATA bounds where no
// cgroup can be made), in 64 MB steps, at least 128 MB, at most the
// owner's. Nil when the samples saw nothing (a run too short for one).
func proposeMemory(owner policyfile.File, used learnPeak, notes []string) (*int, []string) {
	const mb = 1 << 20
	resident := max(used.TreeRSS, used.OneHWM)
	if resident == 0 {
		return nil, append(notes, "memory: the run ended before it could be measured, so no limit is proposed: the owner's holds")
	}
	step := func(n uint64) int { return int((n + 64*mb - 1) / (64 * mb) * 64) }
	m := max(128, step(2*resident), step(used.OneData+used.OneData/4))
	line := fmt.Sprintf("memory: %d MB proposed; at most %d MB was resident at once (%d samples), %d MB of data in one process", m, (resident+mb-1)/mb, used.Samples, (used.OneData+mb-1)/mb)
	if owner.Limits != nil && owner.Limits.MemoryMB != nil && *owner.Limits.MemoryMB > 0 && m > *owner.Limits.MemoryMB {
		m = *owner.Limits.MemoryMB
		line += fmt.Sprintf("; the owner's most, %d MB, is what it gets", m)
	}
	return &m, append(notes, line)
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
	if _, err := parsePolicy(path, []byte(req.Policy)); err != nil {
		return nil, badField("policy", nil, "%s", err.Error())
	}
	if err := writeProjectPolicy(dir, []byte(req.Policy)); err != nil {
		return nil, err
	}
	return e.PolicyCheck(ctx, PolicyCheckRequest{ProjectDir: dir})
}
