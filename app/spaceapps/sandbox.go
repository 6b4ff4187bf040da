package spaceapps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/netproxy"
	"github.com/senclaw/sandbox/app/principal"
	"github.com/senclaw/sandbox/backends"
)

// LiveFields are the settings a change of which applies to the running
// process at once (the proxy reads them for every connection).
var LiveFields = []string{"hosts", "allowHttp"}

// Sandbox returns app id's sandbox configuration.
func (s *Supervisor) Sandbox(ctx context.Context, id string) (*SandboxView, error) {
	a, err := s.find(id)
	if err != nil {
		return nil, err
	}
	v := s.sandboxView(ctx, a)
	return &v, nil
}

func (s *Supervisor) sandboxView(ctx context.Context, a *appState) SandboxView {
	backends := s.backendChoices(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	v := SandboxView{
		AppID: a.id, Settings: a.rec.Sandbox, Forced: a.rec.Forced,
		NeedsRestartReasons: s.restartReasons(a),
		LiveFields:          LiveFields, RestartFields: launchFixed, Backends: backends,
	}
	v.NeedsRestart = len(v.NeedsRestartReasons) > 0
	if v.Forced {
		v.LockReason = "the app's manifest forces its sandbox (sandbox.force): it cannot be disabled; register it again with a manifest without force to unlock it"
	}
	if a.running() && a.rec.Last != nil {
		got := a.rec.Last.Settings
		v.Running, v.Isolation = &got, a.rec.Last.Isolation
	}
	return v
}

// backendChoices are auto and the engine's isolating backends.
func (s *Supervisor) backendChoices(ctx context.Context) []string {
	out := []string{"auto"}
	for _, b := range s.e.Capabilities(ctx, false).Backends {
		if b.Isolates {
			out = append(out, b.Backend)
		}
	}
	return out
}

// PutSandbox changes app id's sandbox configuration. Bad values are
// *app.FieldError naming the field and change nothing; disabling a forced
// sandbox is a *app.ConflictError. Hosts changes apply to the running
// process at once; the others from its next launch, and the reply says
// which is which and whether it now needs a restart.
func (s *Supervisor) PutSandbox(ctx context.Context, id string, p SandboxPatch) (*SandboxReply, error) {
	a, err := s.find(id)
	if err != nil {
		return nil, err
	}
	a.op.Lock()
	defer a.op.Unlock()
	a.mu.Lock()
	cur, forced, port, tenant := a.rec.Sandbox, a.rec.Forced, a.rec.Port, a.rec.Tenant
	a.mu.Unlock()
	if forced && p.Enabled != nil && !*p.Enabled {
		return nil, &app.ConflictError{Reason: fmt.Sprintf("Space App %s: its manifest forces its sandbox (sandbox.force), so it cannot be disabled; register it again with a manifest without force to unlock it", id)}
	}
	next, err := s.checkSettings(ctx, mergedSettings(cur, p), port, tenant, "")
	if err != nil {
		return nil, err
	}
	if err := mayRunUnsandboxed(principal.Of(ctx), next); err != nil {
		return nil, err
	}
	changed := changedFields(cur, next)
	reply := &SandboxReply{Changed: changed, AppliedLive: []string{}, PendingRestart: []string{}}
	a.mu.Lock()
	before := len(s.restartReasons(a)) > 0
	by := a.rec.DisabledBy
	a.rec.Sandbox = next
	switch {
	case next.Enabled:
		a.rec.DisabledBy = ""
	case cur.Enabled:
		a.rec.DisabledBy = DisabledByOwner
	}
	if err := s.save(a); err != nil {
		a.rec.Sandbox, a.rec.DisabledBy = cur, by
		a.mu.Unlock()
		return nil, err
	}
	running, last := a.running(), a.rec.Last
	var launchSet SandboxSettings
	if last != nil {
		launchSet = last.Settings
	}
	a.mu.Unlock()
	switch {
	case !running:
		reply.Note = "the app does not run: the configuration applies when it starts"
	default:
		live := launchSet.Enabled && launchSet.Network == NetworkHosts
		for _, f := range changed {
			switch {
			case slices.Contains(LiveFields, f) && live:
				reply.AppliedLive = append(reply.AppliedLive, f)
			case slices.Contains(launchFixed, f) || slices.Contains(LiveFields, f):
				reply.PendingRestart = append(reply.PendingRestart, f)
			}
		}
		if len(reply.AppliedLive) > 0 {
			if err := s.applyHostsLive(ctx, a, next.Hosts, next.AllowHTTP); err != nil {
				return nil, err
			}
		}
		reply.Note = liveNote(reply)
	}
	reply.Sandbox = s.sandboxView(ctx, a)
	reply.NeedsRestart = reply.Sandbox.NeedsRestart
	if reply.NeedsRestart && !before {
		a.mu.Lock()
		name := a.rec.Manifest.Name
		a.mu.Unlock()
		s.attention(id, "needs restart: "+name)
	}
	return reply, nil
}

// applyHostsLive gives the running launch's sandbox the new hosts and HTTP
// rules, keeping everything else it was launched with.
func (s *Supervisor) applyHostsLive(ctx context.Context, a *appState, hosts []string, rules []backends.HTTPRule) error {
	a.mu.Lock()
	last := a.rec.Last
	if last == nil {
		a.mu.Unlock()
		return nil
	}
	set := last.Settings
	set.Hosts, set.AllowHTTP = slices.Clone(hosts), slices.Clone(rules)
	dir, port, tenant := a.rec.Dir, last.Port, a.rec.Tenant
	apiAccess := set.DaemonAPI && set.Enabled && a.token != ""
	a.mu.Unlock()
	if _, err := s.e.PutAppSandbox(ctx, app.AppSandbox{ID: sandboxID(a.id), Name: "app:" + a.id, Dir: dir, Config: launchConfig(set, port), APIAccess: apiAccess, Tenant: tenant}); err != nil {
		return fmt.Errorf("applying the hosts to the running app: %w", err)
	}
	a.mu.Lock()
	if a.rec.Last == last {
		a.rec.Last.Settings.Hosts, a.rec.Last.Settings.AllowHTTP = set.Hosts, set.AllowHTTP
		_ = s.save(a)
	}
	a.mu.Unlock()
	return nil
}

func liveNote(r *SandboxReply) string {
	var parts []string
	if len(r.AppliedLive) > 0 {
		parts = append(parts, strings.Join(r.AppliedLive, ", ")+" applied to the running app at once (the proxy checks every new connection)")
	}
	if len(r.PendingRestart) > 0 {
		parts = append(parts, strings.Join(r.PendingRestart, ", ")+" apply when the app is restarted (the running process keeps what it got at launch)")
	}
	if len(parts) == 0 {
		return "nothing changed"
	}
	return strings.Join(parts, "; ")
}

// checkSettings validates set fully (the engine's own guards included:
// folders as mount sources, ports, backend) and returns it normalised.
// prefix is put before field names ("sandbox." for a manifest).
func (s *Supervisor) checkSettings(ctx context.Context, set SandboxSettings, port int, tenant, prefix string) (SandboxSettings, error) {
	f := func(name string) string { return prefix + name }
	if set.ReadMode == "" {
		set.ReadMode = defaultSettings().ReadMode
	}
	if err := checkReadMode(f("readMode"), set.ReadMode); err != nil {
		return set, err
	}
	if set.Network == "" {
		set.Network = NetworkAll
	}
	if err := checkNetworkMode(f("network"), set.Network); err != nil {
		return set, err
	}
	var err error
	if set.Hosts, err = normalizeHosts(f("hosts"), set.Hosts); err != nil {
		return set, err
	}
	if set.AllowHTTP == nil {
		set.AllowHTTP = []backends.HTTPRule{}
	}
	if set.AllowHTTP, err = netproxy.NormalizeHTTPRules(set.AllowHTTP); err != nil {
		var he *netproxy.HTTPRuleError
		if errors.As(err, &he) {
			return set, bad(prefix+he.Field, he.Value, "%v", he.Err)
		}
		return set, err
	}
	if set.Loopback, err = checkLoopback(f("loopback"), set.Loopback); err != nil {
		return set, err
	}
	for _, q := range set.Loopback {
		if slices.Contains(s.e.ProtectedPorts(), q) {
			return set, bad(f("loopback"), q, "is the engine's own API port; an app reaches it only with daemonApi on, and then only its own routes")
		}
	}
	if set.Folders == nil {
		set.Folders = []Folder{}
	}
	if err := checkFolderList(f("folders"), set.Folders); err != nil {
		return set, err
	}
	for i := range set.Folders {
		real, err := s.e.CheckHostDir(fmt.Sprintf("%sfolders[%d].path", prefix, i), set.Folders[i].Path, tenant, !set.Folders[i].ReadOnly)
		if err != nil {
			return set, err
		}
		set.Folders[i].Path = real
	}
	if set.Backend == "" {
		set.Backend = "auto"
	}
	if choices := s.backendChoices(ctx); !slices.Contains(choices, set.Backend) {
		return set, bad(f("backend"), set.Backend, "must be one of %s (an isolating backend of this engine)", strings.Join(choices, ", "))
	}
	if set.Image != "" {
		if err := checkImage(f("image"), set.Image); err != nil {
			return set, err
		}
	}
	if port == 0 {
		port = 49152 // any valid listen port: the app's own is not known yet
	}
	// The engine's own checks (mount guards, port rules, backend), named
	// as the app's fields.
	if err := s.e.CheckSandboxConfig(launchConfig(set, port), tenant); err != nil {
		var fe *app.FieldError
		if errors.As(err, &fe) {
			fe.Field = prefix + engineField(fe.Field)
		}
		return set, err
	}
	return set, nil
}

// engineField maps an engine config field to the app setting it comes
// from.
func engineField(f string) string {
	switch {
	case f == "fsMode":
		return "readMode"
	case f == "loopbackPorts":
		return "loopback"
	case f == "domains":
		return "hosts"
	case strings.HasPrefix(f, "mounts["):
		return "folders" + strings.TrimPrefix(strings.Replace(f, ".source", ".path", 1), "mounts")
	}
	return f
}

// Isolation says what app id gets.
func (s *Supervisor) Isolation(ctx context.Context, id string) (*IsolationView, error) {
	a, err := s.find(id)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	set, dir, running, last := a.rec.Sandbox, a.rec.Dir, a.running(), a.rec.Last
	port := a.rec.Port
	a.mu.Unlock()
	v := &IsolationView{AppID: id, Running: running, Limits: []string{}, LimitsMissing: []string{}}
	if running && last != nil {
		set, port = last.Settings, last.Port
		v.Isolation, v.Backend = last.Isolation, last.Backend
		if rec, err := s.e.Run(last.RunID); err == nil {
			v.Limits, v.LimitsMissing = orEmpty(rec.Enforced), orEmpty(rec.Missing)
		}
	} else {
		v.Backend = s.effectiveBackend(ctx, set)
		v.Isolation = v.Backend
		if !set.Enabled {
			v.Isolation = "none"
		}
	}
	if !set.Enabled || isNone(v.Isolation) {
		uid := s.runUID(id)
		v.Enforced = []string{
			"an environment built from nothing: none of the engine's own variables (nor its API token) reach the app",
			fmt.Sprintf("it runs as uid %d", uid),
		}
		if uid != os.Geteuid() {
			v.Enforced[1] += " (its sandbox's own uid, which no other sandbox and no host process has: a root engine never runs an app as root)"
		}
		files := "files: no barrier; it reads and writes whatever its user may"
		if uid == os.Geteuid() {
			files += ", the engine's own files among them (its API token file too): it runs as the engine's user"
		}
		v.NotEnforced = []string{
			files,
			"network: no rules; network mode, hosts and loopback are not applied, and this machine's services are reachable",
			"limits: no memory, process or CPU limit",
		}
		v.Note = "the sandbox is disabled: the app runs on this machine with no barrier (isolation none); enable it and restart the app to confine it"
		a.mu.Lock()
		if a.rec.DisabledBy == DisabledByManifest {
			v.Note = "its manifest says \"sandbox\": {\"enabled\": false}: the app runs on this machine with no barrier (isolation none); enable its sandbox and restart it to confine it"
		}
		a.mu.Unlock()
		return v, nil
	}
	v.Enforced = []string{
		fmt.Sprintf("writes: only its own directory %s, its read-write folders and a private /tmp", dir),
		"reads: " + readModeWords(set.ReadMode),
		fmt.Sprintf("its port %d is reachable from this machine at 127.0.0.1 only", port),
	}
	switch set.Network {
	case NetworkAll:
		v.Enforced = append(v.Enforced, "network all: public addresses only, through the engine's proxy; this machine's services, private ranges and cloud metadata are refused")
	case NetworkHosts:
		if len(set.Hosts) == 0 {
			v.Enforced = append(v.Enforced, "network hosts with no host listed: nothing outside is reachable")
		} else {
			v.Enforced = append(v.Enforced, "network hosts: only "+strings.Join(set.Hosts, ", ")+" through the engine's proxy; every other name and every address literal is refused and counted")
		}
	case NetworkOff:
		v.Enforced = append(v.Enforced, "network off: no egress; its own network namespace with loopback only")
	}
	if len(set.Loopback) > 0 {
		v.Enforced = append(v.Enforced, "this machine's services: ports "+portList(set.Loopback)+" only")
	} else {
		v.Enforced = append(v.Enforced, "this machine's services: none")
	}
	if set.DaemonAPI {
		v.Enforced = append(v.Enforced, "daemonApi: its own token reaches only its runtime and logs routes of the engine's API")
	}
	v.NotEnforced = []string{
		"disk: no quota (an app keeps its data in its directory)",
		"UDP and other non-TCP traffic is not forwarded (so it is blocked), and programs that ignore the proxy variables get no network",
	}
	if sb, err := s.e.Get(sandboxID(id)); err == nil {
		v.Note = s.e.CreateNotes(ctx, sb).Text()
	}
	return v, nil
}

func readModeWords(mode string) string {
	switch mode {
	case "strict":
		return "strict: its directory, its folders and the system folders (/usr, /etc, ...); not your home or other data"
	case "allowlist":
		return "allowlist: strict plus the paths in the engine's allowlist setting"
	}
	return "open: the whole disk read-only except secret folders (.ssh, .aws, browser profiles, keyrings, ...) and the engine's own data"
}

func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
