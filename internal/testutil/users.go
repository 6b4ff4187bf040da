package testutil

import (
	"os"

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
