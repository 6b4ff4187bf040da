package bwrap

import (
	"path"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
)

// SystemRoots returns the directories that strict and allowlist sandboxes
// see read-only, so that programs and their libraries work.
func SystemRoots() []string {
	return []string{
		"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
		"/etc", "/opt", "/run/current-system", "/nix/store",
	}
}

// FDs are the file descriptor numbers, as bwrap sees them, of the seccomp
// program, the info pipe and the block pipe, and of the mount sources.
type FDs struct {
	Seccomp int
	Info    int
	Block   int
	// Workspace, when set, is an open handle of the workspace, which is
	// bound from it like the mounts below (spec.WorkspaceExact).
	Workspace int
	// UnixGuard, when set, is the descriptor over which the forwarder
	// hands the Unix socket guard to the engine (spec.UnixGuard).
	UnixGuard int
	// Mounts, when set, has one open handle per spec.Mounts entry, in
	// order: bwrap binds the very directory the engine opened and checked
	// (--bind-fd), not whatever the path names when bwrap gets to it, so
	// a symlink swapped into a source path (by code in another sandbox
	// that can write above it) leads nowhere. Nil binds by path (tests).
	Mounts []int
}

// Root is a system root as found on the host.
type Root struct {
	Path string
	// Symlink is the link's target when Path is a symbolic link (on merged
	// /usr systems /bin is "usr/bin"); the sandbox gets the same link.
	Symlink string
}

// PathKind says what a host path is.
type PathKind int

const (
	// Absent: the path does not exist; there is nothing to mask.
	Absent PathKind = iota
	// Dir is a directory; it is masked with an empty tmpfs.
	Dir
	// File is anything else; /dev/null is bound over it.
	File
)

// Host is what Args needs to know about the machine. Start fills it in;
// tests write it by hand.
type Host struct {
	// Roots are the existing system roots, in SystemRoots order.
	Roots []Root
	// Hidden says what each of spec.Hidden is on the host.
	Hidden map[string]PathKind
}

// Args builds bwrap's argument list for spec. It is a pure function: it
// reads nothing from the environment or the disk.
func Args(spec *backends.Spec, host Host, fds FDs) []string {
	a := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--disable-userns",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	// Always a network namespace of its own, with only loopback: the way
	// out, when there is one, is the engine's proxy (spec.Net).
	a = append(a, "--unshare-net")
	var exposed []string
	if spec.FsMode == backends.FsOpen {
		a = append(a, "--ro-bind", "/", "/")
		exposed = []string{"/"}
		// A private /run, network or not: the host's holds the sockets of
		// its services (databases, D-Bus, container engines), and a Unix
		// socket is reached through the filesystem, not the network
		// namespace, so a read-only view of it would be a way to this
		// machine's services. (The plumbing's mount points go there too.)
		// System roots that live under /run (NixOS) come back.
		a = append(a, "--tmpfs", "/run")
		for _, r := range host.Roots {
			if !under(r.Path, []string{"/run"}) {
				continue
			}
			if r.Symlink != "" {
				a = append(a, "--symlink", r.Symlink, r.Path)
			} else {
				a = append(a, "--ro-bind", r.Path, r.Path)
			}
		}
	} else {
		for _, r := range host.Roots {
			if r.Symlink != "" {
				a = append(a, "--symlink", r.Symlink, r.Path)
				continue
			}
			a = append(a, "--ro-bind", r.Path, r.Path)
			exposed = append(exposed, r.Path)
		}
		if spec.FsMode == backends.FsAllowlist {
			for _, p := range spec.ReadPaths {
				a = append(a, "--ro-bind-try", p, p)
				exposed = append(exposed, p)
			}
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	// Hidden paths are masked after the read-only views and before the
	// workspace, so a workspace inside a hidden directory still appears.
	for _, h := range spec.Hidden {
		if !under(h, exposed) {
			continue
		}
		if spec.FsMode == backends.FsOpen && under(h, []string{"/run"}) {
			continue // the private /run has nothing to mask
		}
		switch host.Hidden[h] {
		case Dir:
			a = append(a, "--tmpfs", h)
		case File:
			a = append(a, "--ro-bind", "/dev/null", h)
		}
	}
	w := spec.Workspace
	if fds.Workspace > 0 {
		a = append(a, "--bind-fd", strconv.Itoa(fds.Workspace), w)
	} else {
		a = append(a, "--bind", w, w)
	}
	for i, m := range spec.Mounts {
		// Cleaning "/"+target drops any leading "..", so a mount can never
		// land outside the workspace even if validation was skipped.
		target := path.Join(w, path.Clean("/"+m.Target))
		op, src := "--bind", m.Source
		if m.ReadOnly {
			op = "--ro-bind"
		}
		if i < len(fds.Mounts) {
			op, src = op+"-fd", strconv.Itoa(fds.Mounts[i])
		}
		a = append(a, op, src, target)
	}
	argv := spec.Argv
	if spec.Net != nil {
		a = append(a,
			"--bind", spec.Net.Dir, netfwd.MountDir,
			"--ro-bind", spec.Net.Forwarder, netfwd.BinaryPath)
		argv = netfwd.Argv(spec.Net, spec.Argv)
	}
	// The Unix socket guard (issue #10): the forwarder loads it in front
	// of the command, with or without network.
	if g := spec.UnixGuard; g != nil && fds.UnixGuard > 0 {
		if spec.Net == nil {
			a = append(a, "--ro-bind", g.Forwarder, netfwd.BinaryPath)
		}
		argv = netfwd.GuardedArgv(spec.Net, fds.UnixGuard, spec.Argv)
	}
	a = append(a,
		"--seccomp", strconv.Itoa(fds.Seccomp),
		"--info-fd", strconv.Itoa(fds.Info),
		"--block-fd", strconv.Itoa(fds.Block),
		"--chdir", w, "--")
	return append(a, argv...)
}

// under reports whether p is one of roots or inside one of them.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if r == "/" || p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}
