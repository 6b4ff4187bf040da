package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// hardeningVersion names the set of hardening choices in config.go. Bump it
// whenever containerConfig changes what an existing container would get, so
// the config hash changes and existing containers show "needs recreate".
const hardeningVersion = "senclaw-docker-hardening-2"

// Defaults for limits a Spec leaves at zero: a container is never without
// a process and memory ceiling.
const (
	defaultPids     = 1024
	defaultMemoryMB = 2048
	nobody          = 65534
)

// shape is the canonical form of every input that shapes a container.
// Slices are sorted, numbers formatted one way, so that the same sandbox
// settings always give the same hash (and the hash never flaps).
type shape struct {
	Hardening string       `json:"hardening"`
	Seccomp   string       `json:"seccomp"`
	Image     string       `json:"image"`
	Workspace string       `json:"workspace"`
	Mounts    []mountShape `json:"mounts"`
	Network   string       `json:"network"`
	// NetDir and Forwarder are the engine's network plumbing bound into
	// the container (empty without network). Port and domain rules are
	// not part of the shape: the proxy applies them per connection, and
	// the forwarder of each run serves its listen ports.
	NetDir    string `json:"netDir,omitempty"`
	Forwarder string `json:"forwarder,omitempty"`
	CPUs      string `json:"cpus"`
	MemoryMB  int    `json:"memoryMb"`
	Pids      int    `json:"pids"`
	DiskMB    int    `json:"diskMb"`
	User      string `json:"user"`
	// Masked are the container paths /dev/null is bound over (a
	// switched-off runtime's files, masks.go), sorted; none for most
	// sandboxes, which then hash as before.
	Masked []string `json:"masked,omitempty"`
	// Protected are the agents' and git's files of the person's folders
	// bound read-only over themselves (spec.Protected), sorted; none for
	// the engine's own workspaces, which then hash as before.
	Protected []mountShape `json:"protected,omitempty"`
	// WorkspaceFS is "mount" when the workspace is a filesystem of its
	// own (its disk image, a one-shot's tmpfs): a container binds what is
	// at the path when it is made, so one made before the workspace got
	// its image must be made again.
	WorkspaceFS string `json:"workspaceFs,omitempty"`
	// WorkspaceExact is spec.WorkspaceExact: the workspace path must be
	// its real path when the container is made. It does not shape the
	// container, so it is not hashed.
	WorkspaceExact bool `json:"-"`
	// Remote is set for a daemon elsewhere (remote.go): the workspace is
	// the volume Volume (a tmpfs for a one-shot, Volume empty), each
	// mount a volume holding its copy, /run a volume the forwarder
	// (Helper, its digest) is copied into; nothing of this machine is
	// bound. Unset for this machine's daemon, which hashes as before.
	Remote bool   `json:"remote,omitempty"`
	Volume string `json:"volume,omitempty"`
	Helper string `json:"helper,omitempty"`
	// sandboxID names the volumes; it is part of Volume already.
	sandboxID string
}

type mountShape struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly"`
	// Volume holds the mount's copy on a daemon elsewhere.
	Volume string `json:"volume,omitempty"`
	// copy is the mount's Copy: what a daemon elsewhere needs.
	copy bool
}

// hash is the label value senclaw.config-hash: 16 hex digits of the
// SHA-256 of the shape's JSON (struct fields encode in a fixed order).
func (s shape) hash() string {
	data, _ := json.Marshal(s) // a struct of strings and ints cannot fail
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// poolKey is the hash of s without its workspace and user: one-shot
// containers of the same settings are interchangeable, and each run's
// command runs as its own sandbox's user (the exec's), whoever the
// container's own waiting process is.
func (s shape) poolKey() string {
	s.Workspace, s.User = "", ""
	return s.hash()
}

// shapeOf resolves spec into a shape. It fails closed on anything it
// cannot place safely: a mount escaping /work, uid 0, a privileged port.
func shapeOf(spec *backends.Spec, opts *Options, seccompDigest string) (shape, error) {
	// The network mode is always none: a container's only way out is the
	// engine's proxy, through the plumbing bound in below.
	s := shape{Hardening: hardeningVersion, Seccomp: seccompDigest, Network: "none", Mounts: []mountShape{}}
	s.sandboxID = spec.SandboxID
	s.Image = spec.Image
	if s.Image == "" {
		s.Image = opts.DefaultImage
	}
	if s.Image == "" {
		return s, fmt.Errorf("no container image: the sandbox names none and the engine has no default image; set one, for example senclaw-test/busybox:latest built by scripts/docker-test-image.sh, or pull one with `docker pull debian:bookworm-slim`")
	}
	if !filepath.IsAbs(spec.Workspace) {
		return s, fmt.Errorf("workspace %q is not an absolute path", spec.Workspace)
	}
	s.Workspace = filepath.Clean(spec.Workspace)
	s.WorkspaceExact = spec.WorkspaceExact
	for _, m := range spec.Mounts {
		target, err := mountTarget(m.Target)
		if err != nil {
			return s, err
		}
		if !filepath.IsAbs(m.Source) {
			return s, fmt.Errorf("mount source %q is not an absolute path", m.Source)
		}
		s.Mounts = append(s.Mounts, mountShape{Source: filepath.Clean(m.Source), Target: target, ReadOnly: m.ReadOnly, copy: m.Copy})
	}
	slices.SortFunc(s.Mounts, func(a, b mountShape) int { return strings.Compare(a.Target, b.Target) })
	for i := 1; i < len(s.Mounts); i++ {
		if s.Mounts[i].Target == s.Mounts[i-1].Target {
			return s, fmt.Errorf("two mounts share the target %q; give each its own", s.Mounts[i].Target)
		}
	}
	for _, p := range spec.Ports.Listen {
		if p < 1024 || p > 65535 {
			return s, fmt.Errorf("listen port %d is outside 1024-65535", p)
		}
	}
	// A sandbox elsewhere has no plumbing directory: its network goes
	// over the relay to Serve (relay.go).
	if n := spec.Net; n != nil && (n.Dir != "" || n.Serve == nil) {
		if !filepath.IsAbs(n.Dir) || !filepath.IsAbs(n.Forwarder) {
			return s, fmt.Errorf("the network plumbing paths %q and %q must be absolute", n.Dir, n.Forwarder)
		}
		s.NetDir, s.Forwarder = filepath.Clean(n.Dir), filepath.Clean(n.Forwarder)
	}
	pm := newPathMap(s)
	for _, p := range spec.Protected {
		if _, _, ok := backends.ProtectedIn(spec, p); !ok || !filepath.IsAbs(p) {
			return s, fmt.Errorf("protected path %q lies in neither the workspace nor a read-write mount", p)
		}
		s.Protected = append(s.Protected, mountShape{Source: filepath.Clean(p), Target: pm.translate(filepath.Clean(p)), ReadOnly: true})
	}
	slices.SortFunc(s.Protected, func(a, b mountShape) int { return strings.Compare(a.Target, b.Target) })
	if spec.Limits.CPUs > 0 {
		s.CPUs = strconv.FormatFloat(spec.Limits.CPUs, 'f', 3, 64)
	}
	s.MemoryMB = orDefault(spec.Limits.MemoryMB, defaultMemoryMB)
	s.Pids = orDefault(spec.Limits.Pids, defaultPids)
	s.DiskMB = max(spec.Limits.DiskMB, 0)
	user, err := containerUser(spec.User, opts.User)
	if err != nil {
		return s, err
	}
	s.User = user
	return s, nil
}

// mountTarget checks a mount target: a relative path that stays under
// /work and is not /work itself.
func mountTarget(t string) (string, error) {
	c := path.Clean("/" + filepath.ToSlash(t))
	if t == "" || path.IsAbs(filepath.ToSlash(t)) || c == "/" || strings.Contains(filepath.ToSlash(t), "..") {
		return "", fmt.Errorf("mount target %q must be a relative path inside the workspace, without \"..\"", t)
	}
	return strings.TrimPrefix(c, "/"), nil
}

// containerUser is "uid:gid" of who runs the code: the Spec's user, else
// the configured one, else the engine's own uid when it is not root, else
// nobody. Root is refused: without a user namespace, uid 0 in a container
// is uid 0 on the host.
func containerUser(spec, configured *backends.Credential) (string, error) {
	c := spec
	if c == nil {
		c = configured
	}
	if c == nil {
		if uid := os.Getuid(); uid > 0 {
			c = &backends.Credential{UID: uint32(uid), GID: uint32(os.Getgid())}
		} else {
			c = &backends.Credential{UID: nobody, GID: nobody}
		}
	}
	if c.UID == 0 {
		return "", fmt.Errorf("refusing to run a container as uid 0: it would be root on the host; run the sandbox as an unprivileged user")
	}
	return fmt.Sprintf("%d:%d", c.UID, c.GID), nil
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
