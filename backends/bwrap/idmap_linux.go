package bwrap

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/idmap"
	"golang.org/x/sys/unix"
)

var _ backends.IDMapper = (*Backend)(nil)

// IDMapsMounts reports whether Start can bind a mount through an
// idmapped mount: with the launcher and its directory configured.
func (b *Backend) IDMapsMounts() (bool, string) {
	if b.opts.Launcher == "" || b.opts.IDMapDir == "" {
		return false, "the bwrap backend was not given the idmap launcher"
	}
	return true, ""
}

// idmapped reports whether spec has a mount, or its workspace, bound
// through an idmapped mount.
func idmapped(spec *backends.Spec) bool {
	if spec.WorkspaceIDMap {
		return true
	}
	for _, m := range append(slices.Clone(spec.Mounts), spec.Caches...) {
		if m.IDMap {
			return true
		}
	}
	return false
}

// workspacePoint is the number of the mount point a run's idmapped
// workspace is attached at: after its mounts'.
func workspacePoint(spec *backends.Spec) int { return len(spec.Mounts) }

// idmapMount turns dir, the checked handle of a mount source, into a
// detached idmapped mount of it in which its owner is the sandbox user
// cred; it closes dir. Such a run goes through the launcher, and is
// traced by nothing (strace would run in front of it).
func (b *Backend) idmapMount(dir *os.File, cred *syscall.Credential, spec *backends.Spec) (*os.File, idmap.Mapping, error) {
	defer dir.Close()
	var none idmap.Mapping
	if ok, why := b.IDMapsMounts(); !ok {
		return nil, none, &RefusedError{Reason: why}
	}
	if cred == nil {
		return nil, none, &RefusedError{Reason: "an idmapped mount is for a root engine, whose sandbox user is another"}
	}
	if spec.Trace != nil {
		return nil, none, &RefusedError{Reason: "a run with a mount made writable through an idmapped mount cannot be traced; run it without the trace, or give the mount read-only"}
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return nil, none, fmt.Errorf("starting bwrap: %s: %w", dir.Name(), err)
	}
	mapping := idmap.Mapping{OwnerUID: st.Uid, OwnerGID: st.Gid, SandboxUID: cred.Uid, SandboxGID: cred.Gid}
	m, err := idmap.Clone(dir, mapping)
	if err != nil {
		return nil, none, &RefusedError{Reason: fmt.Sprintf("the mount source %s cannot be made writable for the sandbox user: %v", dir.Name(), err)}
	}
	return m, mapping, nil
}

// idmappedLine says in words what an idmapped mount at target enforces.
func idmappedLine(target string, readOnly bool, m idmap.Mapping) string {
	if readOnly {
		return fmt.Sprintf("mount %s: readable through an idmapped mount, read-only, as its owner uid %d (only that uid and gid %d are mapped)", target, m.OwnerUID, m.OwnerGID)
	}
	return fmt.Sprintf("mount %s: writable through an idmapped mount, as its owner uid %d (only that uid and gid %d are mapped); no setuid or setgid file can be made", target, m.OwnerUID, m.OwnerGID)
}

// idmappedWorkspaceLine says it of the workspace, a project folder.
func idmappedWorkspaceLine(dir string, m idmap.Mapping) string {
	return fmt.Sprintf("project %s: writable through an idmapped mount, as its owner uid %d (only that uid and gid %d are mapped; what the sandbox writes there belongs to uid %d); no setuid or setgid file can be made", dir, m.OwnerUID, m.OwnerGID, m.OwnerUID)
}

// throughLauncher starts cmd (bwrap) through the idmap launcher instead:
// as root, in a mount namespace of its own where it attaches the run's
// idmapped mounts, then dropped to cred (which cmd would have had) right
// before it execs bwrap.
func (b *Backend) throughLauncher(cmd *exec.Cmd, attach []idmap.Attach, cred *syscall.Credential) {
	for _, a := range attach {
		_ = os.MkdirAll(idmap.Point(b.opts.IDMapDir, a.Point), 0o755)
	}
	cmd.Args = idmap.Argv(b.opts.Launcher, b.opts.IDMapDir, attach, cred.Uid, cred.Gid, append([]string{cmd.Path}, cmd.Args[1:]...))
	cmd.Path = b.opts.Launcher
	cmd.SysProcAttr.Credential = nil
	cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS
}
