package seatbelt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/sys/unix"
)

// Probe checks that sandbox-exec is there and that a trial profile works:
// a write into its workspace lands and a write outside it is denied. Only
// then is Seatbelt healthy.
func (b *Backend) Probe(ctx context.Context) backends.Capability {
	c := backends.Capability{Backend: Name, Isolates: true, Enforces: []string{}, CheckedAt: time.Now()}
	if _, err := os.Stat(Executable); err != nil {
		c.Reason = fmt.Sprintf("%s is missing (%v): Seatbelt cannot be used on this Mac", Executable, err)
		return b.state(c, false)
	}
	if err := b.trial(ctx); err != nil {
		c.Reason = err.Error()
		return b.state(c, false)
	}
	c.Enforces = Enforces
	c.Reason = "a trial profile let a write into its workspace through and denied a write outside it"
	return b.state(c, true)
}

// trial runs sh under a strict profile, writing inside and outside its
// workspace, and checks what landed.
func (b *Backend) trial(ctx context.Context) error {
	dir, err := os.MkdirTemp(b.opts.TempRoot, "senclaw-seatbelt-probe-")
	if err != nil {
		return fmt.Errorf("creating the trial workspace: %w", err)
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		return fmt.Errorf("creating the trial workspace: %w", err)
	}
	outside := filepath.Join(dir, "outside")
	spec := &backends.Spec{
		Workspace: ws, FsMode: backends.FsStrict, Env: []string{"PATH=/usr/bin:/bin"},
		Argv: []string{"/bin/sh", "-c", `echo in > "$1/inside"; echo out > "$2" 2>/dev/null; exit 0`, "sh", ws, outside},
	}
	text, params, err := Profile(spec, b.host(spec, ""))
	if err != nil {
		return fmt.Errorf("building the trial profile: %w", err)
	}
	cmd := exec.CommandContext(ctx, Executable, Command(text, params, spec.Argv)[1:]...)
	cmd.Env, cmd.Dir = spec.Env, ws
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("the trial profile did not run: %v: %s", err, firstLine(string(out)))
	}
	if _, err := os.Stat(filepath.Join(ws, "inside")); err != nil {
		return fmt.Errorf("the trial profile denied a write into its own workspace: %s", firstLine(string(out)))
	}
	if _, err := os.Stat(outside); err == nil {
		return errors.New("a write outside the trial profile's workspace was not denied: Seatbelt does not confine here")
	}
	return nil
}

// host gathers the facts Profile needs.
func (b *Backend) host(spec *backends.Spec, temp string) Host {
	h := Host{Home: b.opts.Home, CacheDir: b.opts.CacheDir, TempDir: temp, Resolve: realDeepest,
		GitRepo: func(dir string) bool { fi, err := os.Stat(filepath.Join(dir, ".git")); return err == nil && fi.IsDir() }}
	for _, name := range []string{"python3", "node"} {
		p, ok := backends.FindExecutable(name, envValue(spec.Env, "PATH"))
		if !ok {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		prefix := filepath.Dir(filepath.Dir(real))
		if prefix != "/" && !underAny(prefix, SystemRoots()) {
			h.Prefixes = append(h.Prefixes, prefix)
		}
	}
	return h
}

// realDeepest resolves the deepest existing ancestor of p and appends the
// rest.
func realDeepest(p string) string {
	rest := ""
	for cur := filepath.Clean(p); ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Start runs spec's command under sandbox-exec. Nothing runs if the
// profile cannot be built or a mount cannot be linked into place.
func (b *Backend) Start(ctx context.Context, spec *backends.Spec) (backends.Process, error) {
	cred, err := credential(spec.User)
	if err != nil {
		return nil, err
	}
	if err := linkMounts(spec); err != nil {
		return nil, err
	}
	env := append([]string{}, spec.Env...)
	temp := ""
	if t := envValue(env, "TMPDIR"); t == "" || !within(filepath.Clean(t), spec.Workspace) {
		// The shared /tmp is no sandbox's: the run gets its own.
		if temp, err = os.MkdirTemp(b.opts.TempRoot, "senclaw-"+safeName(spec.RunID)+"-"); err != nil {
			return nil, fmt.Errorf("starting seatbelt: making the private TMPDIR: %w", err)
		}
		if cred != nil {
			_ = os.Chown(temp, int(cred.Uid), int(cred.Gid))
		}
		env = setEnv(env, "TMPDIR", temp)
	}
	cleanup := func() {
		if temp != "" {
			_ = os.RemoveAll(temp)
		}
	}
	text, params, err := Profile(spec, b.host(spec, temp))
	if err != nil {
		cleanup()
		return nil, err
	}
	argv := Command(text, params, spec.Argv)
	cmd := &exec.Cmd{Path: Executable, Args: argv, Env: env, Dir: spec.Workspace,
		Stdin: spec.Stdin, Stdout: spec.Stdout, Stderr: spec.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Credential: cred}}
	if err := cmd.Start(); err != nil {
		cleanup()
		return nil, fmt.Errorf("starting seatbelt: %w", err)
	}
	enf := backends.Enforcement{Isolation: Name,
		Limits:  []string{"fs: Seatbelt profile from (deny default), writes only to the workspace, the read-write mounts and a private TMPDIR", netWords(spec)},
		Missing: Missing(spec)}
	if spec.Trace != nil {
		enf.Missing = append(enf.Missing, "trace: Seatbelt runs cannot be traced from outside the sandbox")
	}
	return &process{cmd: cmd, enf: enf, cleanup: cleanup}, nil
}

func netWords(spec *backends.Spec) string {
	if !directOutbound(spec) && len(spec.Ports.Loopback) == 0 && len(spec.Ports.Listen) == 0 {
		return "network: none (Seatbelt denies every connection)"
	}
	return "network: Seatbelt port rules (outbound per remote port, loopback per port, listen on loopback only)"
}

// linkMounts makes each mount's target in the workspace a link to its
// source, through a handle on the workspace so that links the sandbox left
// there are replaced, never followed. A real file or folder in the way is
// an error.
func linkMounts(spec *backends.Spec) error {
	if len(spec.Mounts) == 0 {
		return nil
	}
	root, err := os.OpenRoot(spec.Workspace)
	if err != nil {
		return fmt.Errorf("starting seatbelt: opening the workspace: %w", err)
	}
	defer root.Close()
	for _, m := range spec.Mounts {
		if realDeepest(filepath.Join(spec.Workspace, m.Target)) == m.Source {
			continue // already there through a parent mount's link
		}
		fi, err := root.Lstat(m.Target)
		switch {
		case err == nil && fi.Mode()&os.ModeSymlink != 0:
			if err := root.Remove(m.Target); err != nil {
				return fmt.Errorf("starting seatbelt: replacing the link %s: %w", m.Target, err)
			}
		case err == nil:
			return fmt.Errorf("starting seatbelt: the mount %s needs %s in the workspace to be a link to it, and a real file or folder is there; move it away", m.Source, m.Target)
		}
		if dir := filepath.Dir(m.Target); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("starting seatbelt: making %s: %w", dir, err)
			}
		}
		if err := root.Symlink(m.Source, m.Target); err != nil {
			return fmt.Errorf("starting seatbelt: linking %s to %s: %w", m.Target, m.Source, err)
		}
	}
	return nil
}

// credential decides who the sandbox runs as: never root.
func credential(u *backends.Credential) (*syscall.Credential, error) {
	if os.Geteuid() == 0 {
		if u == nil || u.UID == 0 || u.GID == 0 {
			return nil, errors.New("refusing to start the sandbox: the engine runs as root and the sandbox user is root or unset; pass an unprivileged Spec.User")
		}
		return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}, nil
	}
	if u == nil || (int(u.UID) == os.Geteuid() && int(u.GID) == os.Getegid()) {
		return nil, nil
	}
	return nil, fmt.Errorf("refusing to start the sandbox: the engine runs as uid %d and cannot start a sandbox as uid %d", os.Geteuid(), u.UID)
}

// process is a running sandbox-exec and what it started, in one process
// group.
type process struct {
	cmd     *exec.Cmd
	enf     backends.Enforcement
	cleanup func()

	once   sync.Once
	status backends.ExitStatus
	err    error
}

func (p *process) Pid() int                          { return p.cmd.Process.Pid }
func (p *process) Enforcement() backends.Enforcement { return p.enf }

// Wait waits for the leader, then ends the rest of its group.
func (p *process) Wait() (backends.ExitStatus, error) {
	p.once.Do(func() {
		err := p.cmd.Wait()
		_ = p.Kill()
		p.cleanup()
		ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		var exitErr *exec.ExitError
		switch {
		case ws.Signaled():
			p.status = backends.ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal().String()}
		case err != nil && !errors.As(err, &exitErr):
			p.status, p.err = backends.ExitStatus{Code: -1}, err
		default:
			p.status = backends.ExitStatus{Code: ws.ExitStatus()}
		}
	})
	return p.status, p.err
}

// Kill kills the whole process group.
func (p *process) Kill() error {
	err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Pids lists the processes of the group.
func (p *process) Pids() []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", p.cmd.Process.Pid)
	if err != nil {
		return []int{p.cmd.Process.Pid}
	}
	out := make([]int, 0, len(procs))
	for _, k := range procs {
		out = append(out, int(k.Proc.P_pid))
	}
	return out
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

func setEnv(env []string, key, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if within(p, r) {
			return true
		}
	}
	return false
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
