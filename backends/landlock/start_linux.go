package landlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/seccompfilter"
	"github.com/senclaw/sandbox/backends/tracer"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// hostFacts are facts about the machine that do not change while the
// engine runs: where cgroups can be made, the seccomp filters.
type hostFacts struct {
	limits  *limits.Host
	cgroups func() limits.Layout
	// seccomp holds the assembled filter of each variant, built once.
	seccomp sync.Map // seccompfilter.Options -> func() ([]byte, error)
}

func newHostFacts(cg *limits.Host) hostFacts {
	if cg == nil {
		cg = limits.NewHost(limits.HostOptions{})
	}
	return hostFacts{limits: cg, cgroups: cg.Layout}
}

func (h *hostFacts) filter(o seccompfilter.Options) ([]byte, error) {
	f, _ := h.seccomp.LoadOrStore(o, sync.OnceValues(func() ([]byte, error) { return seccompfilter.ProgramFor(o) }))
	return f.(func() ([]byte, error))()
}

// setupTimeout bounds the wait for the helper when ctx has no deadline.
const setupTimeout = 30 * time.Second

// Start runs spec's command under Landlock. ctx bounds the setup only;
// the started process is stopped with Kill. Nothing runs if any part of
// the barrier (credentials, seccomp, Landlock, cgroups, rlimits) cannot
// be set up: the rules are never applied "best effort".
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	r, err := b.prepare(spec)
	if err != nil {
		return nil, err
	}
	runID := spec.RunID
	if runID == "" {
		runID = "run-" + limits.RandomID()
	}
	layout := limits.Layout{}
	if !b.noCgroups {
		layout = b.host.cgroups()
	}
	// The run's cgroups are made while the helper starts; it reads its
	// setup, and so runs nothing of the sandbox, only once it is in them.
	ready := make(chan planned, 1)
	go func() {
		plan, err := limits.NewPlan(layout, spec.SandboxID, runID, spec.Limits)
		ready <- planned{plan, err}
	}()
	p, err := b.launch(ctx, spec, r, ready)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// planned is the run's limits as limits.NewPlan made them.
type planned struct {
	plan *limits.Plan
	err  error
}

// prepared is what Start decided before anything runs.
type prepared struct {
	setup   setup
	missing []string
	// relay, when set, is the run's door to the engine's proxy.
	relay *proxyRelay
	// guard, when set, hands the run's connect, bind and listen calls to
	// the engine (unixguard's inet rules), which does only those to the
	// door's address and the listen ports on loopback: Landlock's TCP
	// rules name ports, not addresses. sup serves it once the run started.
	guard *unixguard.Handoff
	// sup, under supMu, with closed once the run is over.
	supMu  sync.Mutex
	sup    *unixguard.Supervisor
	closed bool
	// prog is the seccomp filter.
	prog []byte
	// noGuard says why a run with network has no guard.
	noGuard string
}

// prepare checks spec against what this kernel's Landlock can enforce and
// builds the helper's setup. Any rule that cannot hold refuses the run.
func (b *Backend) prepare(spec *backends.Spec) (*prepared, error) {
	if err := validate(spec); err != nil {
		return nil, fmt.Errorf("starting landlock: %w", err)
	}
	abi, err := ABIVersion()
	if err != nil {
		return nil, &RefusedError{Reason: err.Error()}
	}
	if abi < MinABI {
		return nil, &RefusedError{Reason: fmt.Sprintf("the kernel offers Landlock ABI %d; the backend needs ABI %d or later (Linux 6.2), which covers truncate", abi, MinABI)}
	}
	user, err := credential(spec.User, spec.HostExec)
	if err != nil {
		return nil, err
	}
	ws, err := checkedDir(spec.Workspace, "the workspace", spec.WorkspaceExact)
	if err != nil {
		return nil, err
	}
	resolved := *spec
	resolved.Workspace = ws
	resolved.Mounts = nil
	for _, m := range spec.Mounts {
		src, err := checkedDir(m.Source, "the mount source", true)
		if err != nil {
			return nil, err
		}
		resolved.Mounts = append(resolved.Mounts, backends.Mount{Source: src, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	resolved.WritePaths = nil
	if len(spec.WritePaths) > 0 && !spec.HostExec {
		return nil, &RefusedError{Reason: "write paths are for a host exec only; give the directories as mounts"}
	}
	for _, w := range spec.WritePaths {
		real, err := checkedDir(w, "the host exec's directory", true)
		if err != nil {
			return nil, err
		}
		resolved.WritePaths = append(resolved.WritePaths, real)
	}
	host := DetectHost(spec)
	if p, bad := Unmaskable(&resolved, host.Masked); bad {
		return nil, &RefusedError{Reason: fmt.Sprintf("%s must not run here, but it lies in the workspace or a read-write mount, from which Landlock cannot take one file out; move it elsewhere or use the bwrap backend", p)}
	}
	r := &prepared{}
	env := privateTmp(spec.Env, ws)
	// No setuid or setgid file either: no nosuid mount is around what a
	// Landlock run writes, and a host exec's files are the engine's
	// user's, root's for a root engine.
	o := seccompfilter.Options{InetStreamOnly: true, NoSockets: spec.Net == nil, NoListen: true, OwnProcessOnly: true, NoHostIPC: true, NoSetID: true}
	if n := spec.Net; n != nil {
		if abi < 4 {
			return nil, &RefusedError{Reason: fmt.Sprintf("this run needs network, and Landlock ABI %d has no TCP rules (ABI 4, Linux 6.7); use bwrap or docker, or turn the network off", abi)}
		}
		relay, err := newProxyRelay(filepath.Join(n.Dir, netfwd.ProxySocket), n.Refused, b.log)
		if err != nil {
			return nil, err
		}
		r.relay = relay
		r.setup.ConnectTCP = []uint16{uint16(relay.port)}
		for _, p := range n.Listen {
			r.setup.BindTCP = append(r.setup.BindTCP, uint16(p))
		}
		ok, why := unixguard.Available()
		if ok && spec.HostExec && user == nil && os.Geteuid() == 0 {
			// The guard makes the run's connects as the run's user, and
			// never as root.
			ok, why = false, "a root engine's host exec runs as uid 0, whose connects the guard does not make"
		}
		r.noGuard = why
		if ok {
			rules := &unixguard.InetRules{Connect: []netip.AddrPort{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(relay.port))}, Bind: r.setup.BindTCP}
			pol := unixguard.Policy{User: user, Inet: rules}
			if spec.Refused != nil {
				pol.Observe = func(c unixguard.Connect) {
					if c.Refused {
						spec.Refused(c.Target)
					}
				}
			}
			if r.guard, err = unixguard.NewHandoff(pol); err != nil {
				r.close()
				return nil, fmt.Errorf("starting landlock: %w", err)
			}
			r.setup.Guard = guardFD
		}
		o.NoListen = len(n.Listen) == 0
		preload := filepath.Join(n.Dir, netfwd.NodePreload)
		host.Files = append(host.Files, preload)
		bundle := filepath.Join(n.Dir, netfwd.CABundle)
		if _, err := os.Lstat(bundle); err == nil {
			host.Files = append(host.Files, bundle)
		}
		env = proxyEnv(env, relay.port, preload, bundle)
	}
	r.prog, err = b.host.filter(o)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("starting landlock: %w", err)
	}
	r.setup.User = user
	r.setup.Seccomp = r.prog
	r.setup.ABI = abi
	r.setup.Grants = Grants(&resolved, host, listDir)
	for _, m := range resolved.Mounts {
		r.setup.Links = append(r.setup.Links, link{Path: filepath.Join(ws, filepath.Clean("/"+m.Target)), Target: m.Source})
	}
	if tmp := envValue(env, "TMPDIR"); tmp != "" && under(tmp, []string{ws}) {
		r.setup.MkDirs = []string{tmp}
	}
	r.setup.Dir = ws
	r.setup.Argv = spec.Argv
	r.setup.Env = env
	r.missing = missing(abi, &resolved, r)
	return r, nil
}

func (r *prepared) close() {
	if r.relay != nil {
		r.relay.Close()
	}
	if r.guard != nil {
		r.guard.Close()
	}
	r.supMu.Lock()
	r.closed = true
	sup := r.sup
	r.supMu.Unlock()
	if sup != nil {
		sup.Close()
	}
}

// setSup keeps the guard's supervisor, or closes it when the run's end
// came first (the reaper may close r while the guard is being accepted).
func (r *prepared) setSup(sup *unixguard.Supervisor) {
	r.supMu.Lock()
	closed := r.closed
	if !closed {
		r.sup = sup
	}
	r.supMu.Unlock()
	if closed && sup != nil {
		sup.Close()
	}
}

// launch starts the helper, puts it into the run's cgroups, hands it its
// setup and waits until it has executed the command or said why not.
func (b *Backend) launch(ctx context.Context, spec *backends.Spec, r *prepared, ready <-chan planned) (_ backends.Process, err error) {
	var plan *limits.Plan
	planned := false
	takePlan := func() error {
		got := <-ready
		plan, planned = got.plan, true
		return got.err
	}
	defer func() {
		if err == nil {
			return
		}
		r.close()
		if !planned {
			_ = takePlan()
		}
		if plan != nil && plan.Cgroups != nil {
			_ = plan.Cgroups.KillAll()
			_ = plan.Cgroups.Remove()
		}
	}()
	exe, err := b.helper()
	if err != nil {
		return nil, err
	}
	setupR, setupW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the setup pipe: %w", err)
	}
	defer setupW.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		setupR.Close()
		return nil, fmt.Errorf("creating the status pipe: %w", err)
	}
	defer statusR.Close()
	cmd := exec.Command(exe, HelperCommand)
	// The helper's own environment is the fixed one of every host-side
	// helper (backends.HelperEnv): the run's reaches only the command,
	// through the setup pipe.
	cmd.Env = backends.HelperEnv()
	cmd.Dir = "/"
	stderr := spec.Stderr
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, stderr
	cmd.ExtraFiles = []*os.File{setupR, statusW}
	if r.guard != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, r.guard.ChildEnd())
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if spec.Terminal != nil {
		// The helper's session is the command's: the terminal becomes its
		// controlling one here, and the helper's exec keeps 0, 1 and 2.
		backends.UseTerminal(cmd, spec.Terminal, spec.TerminalFDs)
	}
	cmd.WaitDelay = 5 * time.Second
	var tr *tracer.Session
	if spec.Trace != nil {
		// strace runs the helper from outside, as the engine's user; the
		// helper's exec of the command is the launcher's one exec.
		if tr, err = tracer.Wrap(cmd, spec.Trace, 1, ""); err != nil {
			setupR.Close()
			statusW.Close()
			return nil, err
		}
		defer tr.Release()
	}
	// The helper is born in the run's cgroups (limits.StartInside) where
	// it can be: moving it there after (Add) waits, on cgroup v1, for an
	// RCU grace period, 10-15 ms here, longer than the rest of the
	// start. Under strace it is moved after, as strace's own child.
	inside := false
	if tr == nil {
		if err = takePlan(); err == nil {
			if plan.Cgroups != nil {
				inside, err = plan.Cgroups.StartInside(cmd.Start)
			} else {
				err = cmd.Start()
			}
		}
	} else {
		err = cmd.Start()
	}
	setupR.Close()
	statusW.Close()
	if r.guard != nil {
		r.guard.ChildEnd().Close()
	}
	if err != nil {
		return nil, fmt.Errorf("starting the landlock helper: %w", err)
	}
	helperPid, parent := cmd.Process.Pid, os.Getpid()
	if tr.Traced() {
		select {
		case <-tr.Started():
			helperPid, parent = tr.Root(), cmd.Process.Pid
		case <-time.After(setupTimeout):
			err = errors.New("strace did not start the helper in time")
		}
	}
	if err == nil && !planned {
		err = takePlan()
	}
	if err == nil && plan.Cgroups != nil && !inside {
		err = plan.Cgroups.Add(helperPid)
	}
	p := newProcess(cmd, helperPid, plan, r, b.log)
	if r.relay != nil {
		// Before the setup goes: nothing of the run can connect earlier.
		uid := uint32(os.Geteuid())
		if r.setup.User != nil {
			uid = r.setup.User.UID
		}
		r.relay.setOwner(uid, p.Pids)
	}
	if err != nil {
		_ = p.Kill()
		_, _ = p.Wait()
		return nil, fmt.Errorf("starting landlock: %w", err)
	}
	r.setup.Parent = parent
	r.setup.Rlimits = plan.Rlimits()
	if plan.Cgroups == nil {
		r.setup.Rlimits = nprocOnTop(r.setup.Rlimits, r.setup.User)
		r.setup.Supervise = true
	}
	if err = json.NewEncoder(setupW).Encode(&r.setup); err == nil {
		err = setupW.Close()
	}
	// The helper hands its guard over and waits for the engine's go-ahead
	// before it execs; the status pipe ends at the exec.
	accepted := make(chan error, 1)
	if r.guard != nil && err == nil {
		go func() {
			sup, err := r.guard.Accept(ctx, helperPid, p.done)
			r.setSup(sup)
			accepted <- err
		}()
	} else {
		accepted <- nil
	}
	msg, werr := waitExec(ctx, statusR)
	aerr := <-accepted
	switch {
	case msg != "":
		_, _ = p.Wait()
		if aerr != nil {
			// The helper's words say that the engine's side failed; the
			// engine's own say why.
			msg += " (" + aerr.Error() + ")"
		}
		return nil, &SetupError{Message: msg}
	case err != nil || werr != nil || aerr != nil:
		_ = p.Kill()
		_, _ = p.Wait()
		return nil, fmt.Errorf("starting landlock: %w", errors.Join(err, werr, aerr))
	}
	if tr != nil {
		return tr.Process(p), nil
	}
	return p, nil
}

// waitExec reads the helper's status pipe until EOF: nothing means the
// helper executed the command (the pipe is close-on-exec), words are its
// setup failure.
func waitExec(ctx context.Context, status io.Reader) (string, error) {
	type result struct {
		msg string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(status, 4096))
		ch <- result{strings.TrimSpace(string(b)), err}
	}()
	timer := time.NewTimer(setupTimeout)
	defer timer.Stop()
	select {
	case res := <-ch:
		return res.msg, res.err
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the landlock helper: %w", ctx.Err())
	case <-timer.C:
		return "", errors.New("waiting for the landlock helper: no answer in time")
	}
}

// helper is the executable started as the helper.
func (b *Backend) helper() (string, error) {
	if b.opts.Helper != "" {
		return b.opts.Helper, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the senclaw executable for the landlock helper: %w", err)
	}
	return exe, nil
}

// credential decides who the command runs as. A root engine never runs a
// sandbox as root; an unprivileged engine runs it as itself. A host exec
// with no user runs as the engine's own user, root too: the off path
// never takes a sandbox uid, and the helper drops every capability of
// root's (dropCredentials), so Landlock and the file modes are all that
// uid 0 has left.
func credential(u *backends.Credential, hostExec bool) (*backends.Credential, error) {
	euid, egid := os.Geteuid(), os.Getegid()
	if hostExec && u == nil {
		return nil, nil
	}
	if euid == 0 {
		if u == nil || u.UID == 0 || u.GID == 0 {
			return nil, &RefusedError{Reason: "the engine runs as root and the sandbox user is root or unset; pass an unprivileged Spec.User (e.g. 65534)"}
		}
		return u, nil
	}
	if u == nil || (int(u.UID) == euid && int(u.GID) == egid) {
		return nil, nil
	}
	return nil, &RefusedError{Reason: fmt.Sprintf("the engine runs as uid %d and cannot start a sandbox as uid %d", euid, u.UID)}
}

// checkedDir returns dir's real path. With exact (a path the engine
// stored canonical), a dir that has come to go through a symlink since
// it was checked, perhaps put there by sandboxed code that may write
// above it, is refused.
func checkedDir(dir, what string, exact bool) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("refused: %s %s cannot be opened (%v); check that it still exists", what, dir, err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("refused: %s %s is not a directory", what, dir)
	}
	if exact && real != dir {
		return "", fmt.Errorf("refused: %s %s now leads to %s (a symlink was put in its path since it was checked); nothing ran. Remove the symlink, or give the directory again", what, dir, real)
	}
	return real, nil
}

// DetectHost looks at the disk for what Grants needs: the system roots and
// the allowlist, hidden and masked paths, each at its real path (a path
// that does not exist has nothing to hide).
func DetectHost(spec *backends.Spec) Host {
	var h Host
	resolve := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			if real, err := filepath.EvalSymlinks(p); err == nil && !containsString(out, real) {
				out = append(out, real)
			}
		}
		return out
	}
	h.Roots = resolve(backends.SystemRoots())
	if spec.FsMode == backends.FsAllowlist {
		h.ReadPaths = resolve(spec.ReadPaths)
	}
	if spec.FsMode == backends.FsOpen {
		// Both the path and where it leads: the sandbox must see neither.
		h.Hidden = append(resolve(spec.Hidden), spec.Hidden...)
	}
	h.Masked = append(resolve(spec.Masked), spec.Masked...)
	return h
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// listDir is the Lister of the real disk.
func listDir(dir string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(des))
	for _, d := range des {
		out = append(out, Entry{Name: d.Name(), Dir: d.IsDir(), Symlink: d.Type()&os.ModeSymlink != 0})
	}
	return out, nil
}

// privateTmp moves a TMPDIR of /tmp (the private /tmp other backends
// give) into the workspace: a Landlock sandbox has no /tmp of its own,
// and the host's is out of its reach.
func privateTmp(env []string, ws string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		if kv == "TMPDIR=/tmp" {
			kv = "TMPDIR=" + filepath.Join(ws, ".tmp")
		}
		out[i] = kv
	}
	return out
}

// proxyEnv points the proxy variables the runner set (at the ports the
// in-namespace forwarder serves for other backends) at the run's own
// door to the proxy, and Node's preload at its host path. The runner's
// "no proxy for localhost" goes: without a namespace and its forwarder,
// this machine's ports are reached through the proxy too, which applies
// the loopback rule.
func proxyEnv(env []string, port int, preload, bundle string) []string {
	hostPort := "127.0.0.1:" + strconv.Itoa(port)
	inside := []string{"127.0.0.1:" + strconv.Itoa(netfwd.HTTPPort), "127.0.0.1:" + strconv.Itoa(netfwd.SOCKSPort)}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case v == defaultNoProxy && (strings.EqualFold(k, "NO_PROXY") || k == "npm_config_noproxy"):
			continue
		case k == "SENCLAW_PROXY_PORT":
			v = strconv.Itoa(port)
		case k == "NODE_OPTIONS":
			v = strings.ReplaceAll(v, netfwd.MountDir+"/"+netfwd.NodePreload, preload)
		case v == netfwd.MountDir+"/"+netfwd.CABundle:
			v = bundle
		case strings.HasSuffix(v, "://"+inside[0]) || strings.HasSuffix(v, "://"+inside[1]):
			scheme, _, _ := strings.Cut(v, "://")
			v = scheme + "://" + hostPort
		}
		out = append(out, k+"="+v)
	}
	return out
}

// defaultNoProxy is the runner's NO_PROXY for sandboxes with a forwarder.
const defaultNoProxy = "localhost,127.0.0.1,::1"

// nprocOnTop raises RLIMIT_NPROC, the fallback for a pids limit without a
// cgroup, by the tasks the sandbox user already has: the kernel counts
// every process and thread of that user on this machine (no user
// namespace here, unlike bwrap), so a limit of N alone would stop the
// run of a desktop user with N processes of their own from forking at
// all. The run may then start about N processes more.
func nprocOnTop(rl []limits.Rlimit, user *backends.Credential) []limits.Rlimit {
	uid := os.Getuid()
	if user != nil {
		uid = int(user.UID)
	}
	out := slices.Clone(rl)
	for i := range out {
		if out[i].Resource == unix.RLIMIT_NPROC {
			out[i].Value += uint64(userTasks(uid))
		}
	}
	return out
}

// userTasks counts the tasks (threads) whose real uid is uid.
func userTasks(uid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		real, threads := -1, 0
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "Uid:":
				real, _ = strconv.Atoi(f[1])
			case len(f) >= 2 && f[0] == "Threads:":
				threads, _ = strconv.Atoi(f[1])
			}
		}
		if real == uid {
			n += threads
		}
	}
	return n
}

// GivesTerminals reports that Start honours Spec.Terminal: the helper
// starts in a session whose controlling terminal it is.
func (b *Backend) GivesTerminals() bool { return true }
