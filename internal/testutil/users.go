package testutil

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// SandboxUser is one way an engine runs sandboxed code.
type SandboxUser struct {
	// Name is the subtest's name: root_engine or ordinary_user.
	Name string
	// Cred is the sandbox user; nil is the test process's own user.
	Cred *backends.Credential
}

// SandboxUsers are the ways the engine can run here: as root with the
// nobody user, and as an ordinary user (a root test imitates it with uid
// 1000, which makes bwrap run unprivileged exactly like on a desktop);
// only the latter when the test is not root.
func SandboxUsers() []SandboxUser {
	if os.Geteuid() != 0 {
		return []SandboxUser{{"ordinary_user", nil}}
	}
	return []SandboxUser{
		{"root_engine", &backends.Credential{UID: 65534, GID: 65534}},
		{"ordinary_user", &backends.Credential{UID: 1000, GID: 1000}},
	}
}

// UID is the host uid a sandbox of u runs as.
func (u SandboxUser) UID() int {
	if u.Cred == nil {
		return os.Geteuid()
	}
	return int(u.Cred.UID)
}

// Run is one started process's end: its output, how it ended.
type Run struct {
	Stdout, Stderr string
	Status         backends.ExitStatus
	Err            error
	Proc           backends.Process
}

// StartAndWait starts spec on b and waits for it, killing it after
// timeout; a failed start fails t.
func StartAndWait(t testing.TB, b backends.Backend, spec *backends.Spec, timeout time.Duration) Run {
	t.Helper()
	var out, errb bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p, err := b.Start(ctx, spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = p.Kill() })
	defer stop()
	st, err := p.Wait()
	return Run{out.String(), errb.String(), st, err, p}
}
