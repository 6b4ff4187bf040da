package bwrap

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/idmap"
	"github.com/senclaw/sandbox/backends/netfwd"
)

// MaxPrefixes bounds Host.Prefixes.
const MaxPrefixes = 16

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
	// Terminal, when set, is the run's terminal (spec.Terminal), which
	// the helper inside makes the command's (netfwd's --tty role).
	Terminal int
	// Caches, when set, has one open handle per spec.Caches entry (-1
	// for one bound through an idmapped mount), bound as Mounts are.
	Caches []int
	// Protected, when set, has one open handle per spec.Protected entry,
	// opened without following a link: what is bound read-only is the
	// very file the engine checked. Nil binds by path (tests).
	Protected []int
	// Ports, when set, is the descriptor over which the engine binds the
	// loopback ports below 1024 for the forwarder (netfwd.PortsHandoff).
	Ports int
	// Argv, when set, is the descriptor over which the sandbox gets its
	// command once set up (StartAhead): the forwarder waits on it in the
	// command's place, and spec.Argv is empty.
	Argv int
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
	// Roots are the existing system roots, in backends.SystemRoots order.
	Roots []Root
	// Prefixes are the install prefixes under /opt of the interpreters on
	// the sandbox's PATH (/opt/python3.12 for a /usr/local/bin/python3.12
	// that leads to /opt/python3.12/bin/python3.12), at most MaxPrefixes:
	// strict and allowlist sandboxes see them read-only.
	Prefixes []string
	// Hidden says what each of spec.Hidden is on the host.
	Hidden map[string]PathKind
	// Masked says what each of spec.Masked is on the host.
	Masked map[string]PathKind
	// IDMapDir is where the run's idmapped mounts (Mount.IDMap) are
	// attached, in the launcher's own mount namespace: the i-th mount's at
	// idmap.Point(IDMapDir, i).
	IDMapDir string
	// JoinedNetwork: bwrap starts in a fresh network namespace of the
	// run's own already (the engine's thread that forks it joined one made
	// ahead), so it makes none (no --unshare-net).
	JoinedNetwork bool
}

// Args builds bwrap's argument list for spec: Flags, "--", Command. It is
// a pure function: it reads nothing from the environment or the disk.
func Args(spec *backends.Spec, host Host, fds FDs) []string {
	return append(append(Flags(spec, host, fds), "--"), Command(spec, fds)...)
}

// Command is what bwrap runs inside: spec.Argv, behind the forwarder when
// the sandbox has the engine's network plumbing, the run has the Unix
// socket guard (fds.UnixGuard) or a terminal (fds.Terminal). It is the
// only part of bwrap's arguments on its command line, which pid 1 inside
// and every process on the host can read; the options, with their host
// paths and the run's environment, go through a descriptor (--args).
func Command(spec *backends.Spec, fds FDs) []string {
	var h netfwd.Handles
	if fds.Terminal > 0 {
		h.TTY = &netfwd.TTY{FD: fds.Terminal, Std: spec.TerminalFDs}
	}
	if spec.UnixGuard != nil {
		h.UnixGuard = fds.UnixGuard
	}
	if spec.Net != nil {
		h.Ports = fds.Ports
	}
	if fds.Argv > 0 {
		h.Argv = fds.Argv
		return netfwd.ArgvWith(spec.Net, h, nil)
	}
	if spec.Net != nil || h.TTY != nil || h.UnixGuard > 0 {
		return netfwd.ArgvWith(spec.Net, h, spec.Argv)
	}
	return spec.Argv
}

// Flags builds bwrap's options for spec, everything before "--". It is
// a pure function.
func Flags(spec *backends.Spec, host Host, fds FDs) []string {
	a := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--disable-userns",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	// bwrap itself starts with backends.HelperEnv; the run's environment is
	// set only for the command it execs.
	a = append(a, "--clearenv")
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	// Always a network namespace of its own, with only loopback: the way
	// out, when there is one, is the engine's proxy (spec.Net).
	if !host.JoinedNetwork {
		a = append(a, "--unshare-net")
	}
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
		for _, p := range host.Prefixes {
			a = append(a, "--ro-bind", p, p)
			exposed = append(exposed, p)
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
		a = append(a, cover(host.Hidden[h], h)...)
	}
	w := spec.Workspace
	switch {
	case spec.WorkspaceIDMap:
		// Attached by the launcher from the handle the engine checked.
		a = append(a, "--bind", idmap.Point(host.IDMapDir, len(spec.Mounts)), w)
	case fds.Workspace > 0:
		a = append(a, "--bind-fd", strconv.Itoa(fds.Workspace), w)
	default:
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
		switch {
		case m.IDMap:
			// Attached by the launcher from the handle the engine checked.
			src = idmap.Point(host.IDMapDir, i)
		case i < len(fds.Mounts):
			op, src = op+"-fd", strconv.Itoa(fds.Mounts[i])
		}
		a = append(a, op, src, target)
	}
	// The project's package caches, in the private /tmp.
	for i, c := range spec.Caches {
		op, src := "--bind", c.Source
		switch {
		case c.IDMap:
			src = idmap.Point(host.IDMapDir, cachePoint(spec, i))
		case i < len(fds.Caches) && fds.Caches[i] >= 0:
			op, src = "--bind-fd", strconv.Itoa(fds.Caches[i])
		}
		a = append(a, op, src, c.Target)
	}
	// What programs on the host run code from in the person's folders
	// (agents' settings, git's config and hooks): read-only over itself,
	// after the binds that show it, so that the sandbox can neither
	// change nor replace it (a mount point cannot be renamed or removed).
	for i, p := range spec.Protected {
		op, src := "--ro-bind", p
		if at, ok := idmappedPoint(spec, p); ok {
			src = path.Join(idmap.Point(host.IDMapDir, at.point), at.rel)
		} else if i < len(fds.Protected) && fds.Protected[i] >= 0 {
			op, src = "--ro-bind-fd", strconv.Itoa(fds.Protected[i])
		}
		a = append(a, op, src, protectedAt(spec, p))
	}
	// The forwarder, bound in when the run needs it: for the network
	// plumbing, the Unix socket guard (it loads the guard in
	// front of the command, with or without network) or a terminal.
	switch {
	case spec.Net != nil:
		a = append(a,
			"--bind", spec.Net.Dir, netfwd.MountDir,
			"--ro-bind", spec.Net.Forwarder, netfwd.BinaryPath)
	case spec.UnixGuard != nil && fds.UnixGuard > 0:
		a = append(a, "--ro-bind", spec.UnixGuard.Forwarder, netfwd.BinaryPath)
	case fds.Terminal > 0 || fds.Argv > 0:
		a = append(a, "--ro-bind", helperPath(spec), netfwd.BinaryPath)
	}
	a = append(a, masks(spec, host, exposed)...)
	return append(a,
		"--seccomp", strconv.Itoa(fds.Seccomp),
		"--info-fd", strconv.Itoa(fds.Info),
		"--block-fd", strconv.Itoa(fds.Block),
		"--chdir", w)
}

// helperPath is the host path of the forwarder a run without network
// plumbing binds in: the Unix socket guard's, else spec.Helper.
func helperPath(spec *backends.Spec) string {
	if g := spec.UnixGuard; g != nil && g.Forwarder != "" {
		return g.Forwarder
	}
	return spec.Helper
}

// idmappedAt is where in the launcher's idmapped view a protected path
// lies: the mount point's number and the path below it.
type idmappedAt struct {
	point int
	rel   string
}

// idmappedPoint says whether the protected path p lies in a mount, or
// the workspace, bound through an idmapped mount, and where it is in
// the launcher's view of it: the sandbox user may be unable to walk to
// it on the host (a folder below root's 0700 /root), and bwrap, which
// binds as that user, binds it from that view instead.
func idmappedPoint(spec *backends.Spec, p string) (idmappedAt, bool) {
	mount, rel, ok := backends.ProtectedIn(spec, p)
	switch {
	case !ok:
		return idmappedAt{}, false
	case mount >= 0 && spec.Mounts[mount].IDMap:
		return idmappedAt{mount, rel}, true
	case mount < 0 && spec.WorkspaceIDMap:
		return idmappedAt{len(spec.Mounts), rel}, true
	}
	return idmappedAt{}, false
}

// protectedAt is where the protected path p appears in the sandbox: at
// its own path in the workspace, under its mount's target in a mount.
func protectedAt(spec *backends.Spec, p string) string {
	mount, rel, _ := backends.ProtectedIn(spec, p)
	if mount < 0 {
		return p
	}
	return path.Join(spec.Workspace, path.Clean("/"+spec.Mounts[mount].Target), rel)
}

// masks covers each of spec.Masked (a switched-off interpreter or its
// library) wherever the sandbox sees it: at its own path when that is in
// view (exposed, or the workspace), and at every mount target whose source
// holds it. They come last, so no later bind can show the file again. A
// file gets /dev/null, bound read-only and so without device access:
// executing it fails, and so does reading (no copy of it can be made).
func masks(spec *backends.Spec, host Host, exposed []string) []string {
	var a []string
	w := spec.Workspace
	for _, m := range spec.Masked {
		if under(m, exposed) && (spec.FsMode != backends.FsOpen || !under(m, []string{"/run"})) || under(m, []string{w}) {
			a = append(a, cover(host.Masked[m], m)...)
		}
		for _, mt := range spec.Mounts {
			if under(m, []string{mt.Source}) {
				rel := strings.TrimPrefix(strings.TrimPrefix(m, mt.Source), "/")
				a = append(a, cover(host.Masked[m], path.Join(w, path.Clean("/"+mt.Target), rel))...)
			}
		}
	}
	return a
}

// cover masks what is at: an empty tmpfs over a directory, /dev/null
// (read-only) over anything else, nothing when there is nothing.
func cover(kind PathKind, at string) []string {
	switch kind {
	case Dir:
		return []string{"--tmpfs", at}
	case File:
		return []string{"--ro-bind", "/dev/null", at}
	}
	return nil
}

// ArgsData encodes options for bwrap's --args descriptor: each one ended
// by a NUL. An option holding a NUL byte would split into two and let a
// value (a variable of the run's environment) pass options of its own, so
// it is refused.
func ArgsData(opts []string) ([]byte, error) {
	n := 0
	for _, o := range opts {
		n += len(o) + 1
	}
	b := make([]byte, 0, n)
	for _, o := range opts {
		if strings.IndexByte(o, 0) >= 0 {
			return nil, fmt.Errorf("refusing a bwrap option that holds a NUL byte: %q", o)
		}
		b = append(append(b, o...), 0)
	}
	return b, nil
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

// cachePoint is the number of the mount point the idmapped cache i of a
// run is attached at: after its mounts' and its workspace's.
func cachePoint(spec *backends.Spec, i int) int { return len(spec.Mounts) + 1 + i }
