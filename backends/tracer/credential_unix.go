//go:build unix

package tracer

import (
	"os"
	"os/exec"
)

// takeCredential moves cmd's Credential out of it when the engine is
// root: strace then starts as root and setpriv drops to the user.
func takeCredential(cmd *exec.Cmd) *Credential {
	attr := cmd.SysProcAttr
	if attr == nil || attr.Credential == nil || os.Geteuid() != 0 {
		return nil
	}
	c := &Credential{UID: attr.Credential.Uid, GID: attr.Credential.Gid}
	copied := *attr
	copied.Credential = nil
	cmd.SysProcAttr = &copied
	return c
}
