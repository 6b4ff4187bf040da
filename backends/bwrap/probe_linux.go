package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/limits"
)

// Probe checks that bwrap is installed and that a trial sandbox of the
// same shape as real runs (user namespace, --disable-userns, seccomp, the
// sandbox user) starts within ctx's deadline.
func (b *Backend) Probe(ctx context.Context) backends.Capability {
	c, healthy := b.check(ctx)
	b.history.Settle(&c, healthy, b.log)
	return c
}

func (b *Backend) check(ctx context.Context) (backends.Capability, bool) {
	c := backends.Capability{Backend: Name, Isolates: true, CheckedAt: time.Now(), Details: map[string]string{}}
	bin, err := b.binary()
	if err != nil {
		c.Reason = "bwrap is not installed or not on PATH: install it with `apt-get install bubblewrap`"
		return c, false
	}
	ver := exec.CommandContext(ctx, bin, "--version")
	ver.Env = []string{}
	out, err := ver.Output()
	if err != nil {
		c.Reason = fmt.Sprintf("running %s --version failed: %v", bin, err)
		return c, false
	}
	c.Version = strings.TrimPrefix(strings.TrimSpace(string(out)), "bubblewrap ")

	user := b.probeUser()
	c.Details["user"] = fmt.Sprintf("%d:%d", user.UID, user.GID)
	layout := b.host.cgroups()
	writable := layout.Writable()
	c.Details["cgroup"] = layout.Name()
	c.Details["cgroup_writable"] = yesNo(writable)
	held, _ := b.host.limits.Held()
	c.Details["limits"] = string(held)
	c.Details["seccomp"] = "no"

	if err := b.trial(ctx, user); err != nil {
		c.Reason = err.Error()
		return c, false
	}
	c.Details["seccomp"] = "yes"
	c.Enforces = []string{"fs", "network", "seccomp", "disk"}
	if writable {
		c.Enforces = append(c.Enforces, "memory", "pids", "cpu")
	}
	c.Reason = "a trial sandbox started as uid " + fmt.Sprint(user.UID) + " with a user namespace and seccomp"
	return c, true
}

// trial runs a trivial sandbox that checks its own seccomp mode.
func (b *Backend) trial(ctx context.Context, user *backends.Credential) error {
	dir, err := os.MkdirTemp("", "senclaw-bwrap-probe-")
	if err != nil {
		return fmt.Errorf("creating the trial workspace: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("creating the trial workspace: %w", err)
	}
	var stderr bytes.Buffer
	spec := &backends.Spec{
		RunID:     "probe-" + limits.RandomID(),
		Workspace: dir,
		Argv:      []string{"sh", "-c", `grep -q "^Seccomp:[[:space:]]*2" /proc/self/status`},
		Env:       []string{"PATH=/usr/bin:/bin"},
		FsMode:    backends.FsStrict,
		Stderr:    &stderr,
		User:      user,
	}
	p, err := b.Start(ctx, spec)
	if err != nil {
		if d := diagnoseUserns(err.Error()+"\n"+stderr.String(), readFile); d != "" {
			return errors.New(d)
		}
		return fmt.Errorf("the trial sandbox did not start: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = p.Kill() })
	defer stop()
	st, err := p.Wait()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("the trial sandbox did not finish in time: %w", ctx.Err())
	case err != nil:
		return fmt.Errorf("the trial sandbox failed: %w", err)
	case st.Code != 0:
		return fmt.Errorf("the trial sandbox ran without a seccomp filter or failed (exit %d): %s", st.Code, firstLine(stderr.String()))
	}
	return nil
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}
