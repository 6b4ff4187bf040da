package landlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// Probe checks that the kernel offers Landlock ABI 3 or later and that a
// trial run of the same shape as real ones (the helper, the sandbox user,
// seccomp, Landlock) cannot write outside its workspace.
func (b *Backend) Probe(ctx context.Context) backends.Capability {
	c, healthy := b.check(ctx)
	b.history.Settle(&c, healthy, b.log)
	return c
}

func (b *Backend) check(ctx context.Context) (backends.Capability, bool) {
	c := backends.Capability{Backend: Name, Isolates: true, CheckedAt: time.Now(), Details: map[string]string{}}
	abi, err := ABIVersion()
	if err != nil {
		c.Reason = err.Error()
		return c, false
	}
	c.Version = fmt.Sprintf("ABI %d", abi)
	c.Details["abi"] = strconv.Itoa(abi)
	for k, v := range Features(abi) {
		c.Details[k] = v
	}
	if abi < MinABI {
		c.Reason = fmt.Sprintf("the kernel offers Landlock ABI %d; the backend needs ABI %d or later (Linux 6.2), which covers truncate", abi, MinABI)
		return c, false
	}
	user := b.probeUser()
	c.Details["user"] = fmt.Sprintf("%d:%d", user.UID, user.GID)
	layout := b.host.cgroups()
	writable := layout.Writable()
	c.Details["cgroup"] = layout.Name()
	c.Details["cgroup_writable"] = yesNo(writable)
	held, _ := b.host.limits.Held()
	c.Details["limits"] = string(held)
	c.Details["processes"] = "visible in /proc (no pid namespace); their limits, priority and scheduling out of reach (seccomp)"
	c.Details["ipc"] = "this machine's (no IPC namespace): System V IPC and POSIX message queues refused (seccomp), /dev/shm out of reach (Landlock)"
	if ok, why := unixguard.Available(); ok {
		c.Details["addresses"] = "the engine answers connect, bind and listen: connects only to the run's door to the proxy, binds on loopback only"
	} else {
		c.Details["addresses"] = "not checked (" + why + "): Landlock's TCP rules name ports, so the door's port is reachable on other hosts"
	}
	if b.opts.Helper != "" {
		c.Details["helper"] = b.opts.Helper
	} else {
		c.Details["helper"] = "the engine's own executable (senclaw-landlock, which starts sooner, was not found beside it)"
	}
	c.Details["agent_files"] = "not kept read-only inside a writable folder (agents' settings, git's config and hooks): use bwrap for agents' projects"
	if err := b.trial(ctx, user); err != nil {
		c.Reason = err.Error()
		return c, false
	}
	c.Enforces = Enforces(abi)
	if writable {
		c.Enforces = append(c.Enforces, "memory", "pids", "cpu")
	}
	c.Reason = fmt.Sprintf("a trial run as uid %d under Landlock ABI %d and seccomp could not write outside its workspace", user.UID, abi)
	return c, true
}

// Features says, per Landlock feature, what this ABI gives.
func Features(abi int) map[string]string {
	give := func(from int, what string) string {
		if abi >= from {
			return what
		}
		return fmt.Sprintf("no (needs ABI %d)", from)
	}
	return map[string]string{
		"fs":      give(3, "reads and writes by path, truncate included"),
		"tcp":     give(4, "TCP bind and connect by port: network through the engine's proxy"),
		"ioctl":   give(5, "device ioctls"),
		"scoping": give(6, "signals and abstract Unix sockets scoped to the sandbox"),
	}
}

// Enforces lists the rules a Landlock ABI lets the backend enforce (the
// cgroup limits come on top where cgroups can be made).
func Enforces(abi int) []string {
	if abi < MinABI {
		return nil
	}
	e := []string{"fs", "seccomp", "disk"}
	if abi >= 4 {
		e = append(e, "network", "ports")
	}
	if abi >= 6 {
		e = append(e, "signals")
	}
	return e
}

// trial runs a sandbox that tries to write into a directory outside its
// workspace that the sandbox user could write on its own: only Landlock
// stands in the way.
func (b *Backend) trial(ctx context.Context, user *backends.Credential) error {
	base, err := os.MkdirTemp("", "senclaw-landlock-probe-")
	if err != nil {
		return fmt.Errorf("creating the trial workspace: %w", err)
	}
	defer os.RemoveAll(base)
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o777); err != nil {
			return fmt.Errorf("creating the trial workspace: %w", err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			return fmt.Errorf("creating the trial workspace: %w", err)
		}
	}
	if err := os.Chmod(base, 0o711); err != nil {
		return fmt.Errorf("creating the trial workspace: %w", err)
	}
	var stderr bytes.Buffer
	spec := &backends.Spec{
		RunID:     "probe-" + limits.RandomID(),
		Workspace: ws,
		Argv:      []string{"sh", "-c", `echo x > "$1/escaped" 2>/dev/null; test ! -e "$1/escaped" && echo x > inside`, "sh", outside},
		Env:       []string{"PATH=/usr/bin:/bin"},
		FsMode:    backends.FsStrict,
		Stderr:    &stderr,
		User:      user,
	}
	p, err := b.Start(ctx, spec)
	if err != nil {
		return fmt.Errorf("the trial run did not start: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = p.Kill() })
	defer stop()
	st, err := p.Wait()
	_, escaped := os.Stat(filepath.Join(outside, "escaped"))
	_, inside := os.Stat(filepath.Join(ws, "inside"))
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("the trial run did not finish in time: %w", ctx.Err())
	case err != nil:
		return fmt.Errorf("the trial run failed: %w", err)
	case escaped == nil:
		return errors.New("a trial run wrote outside its workspace: Landlock does not hold here")
	case st.Code != 0 || inside != nil:
		return fmt.Errorf("the trial run failed (exit %d): %s", st.Code, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}
