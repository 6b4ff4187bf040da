package app

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends"
)

// homeSecrets are folders and files under a home directory that hold
// credentials. They are masked in open mode and can never be mounted.
var homeSecrets = []string{
	".ssh", ".aws", ".gnupg", ".config/gcloud", ".kube", ".docker", ".netrc",
	".azure", ".config/gh", ".git-credentials", ".npmrc", ".pypirc",
	".cargo/credentials", ".cargo/credentials.toml", ".password-store",
	".local/share/keyrings", ".pki", ".vault-token", ".terraform.d",
	// browser profiles
	".mozilla", ".thunderbird", ".config/google-chrome", ".config/chromium",
	".config/BraveSoftware", ".config/microsoft-edge", ".config/vivaldi",
	".config/opera", ".var/app",
}

// hostSockets are paths of services that would let sandboxed code act
// outside its sandbox (a Docker socket is root on the host). Unix sockets
// are reached through the filesystem, not the network namespace, so they
// are masked in open mode even when the network is off.
var hostSockets = []string{
	"/run/docker.sock", "/var/run/docker.sock", "/run/docker", "/run/containerd",
	"/run/podman", "/run/dbus", "/run/user", "/run/snapd.socket",
	"/run/snapd-snap.socket", "/run/systemd/private", "/run/systemd/journal",
	"/run/libvirt", "/run/lxd-installer.socket", "/var/lib/docker", "/var/lib/containerd",
	"/var/snap/lxd/common/lxd",
}

// systemRoots are refused as mount sources (exact match): mounting one
// adds nothing a jailed mode lacks and would make it writable.
var systemRoots = []string{
	"/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc", "/var",
	"/proc", "/sys", "/dev", "/boot", "/run", "/opt", "/root", "/home", "/tmp",
	"/srv", "/mnt", "/media", "/nix", "/nix/store",
}

// enginePaths are the engine's own directories and the user's home, the
// inputs to protection decisions.
type enginePaths struct {
	data    string
	config  string
	runtime string
	home    string
	// homes are everyone's homes on this machine (homes.go).
	homes *hostHomes
}

// protected returns the canonical paths no sandbox may see: the engine's
// own dirs and the home secrets.
func (p enginePaths) protected() []string {
	var out []string
	add := func(path string) {
		if path == "" {
			return
		}
		out = append(out, canonical(path))
	}
	add(p.data)
	add(p.config)
	add(p.runtime)
	if p.home != "" {
		home := canonical(p.home)
		for _, s := range homeSecrets {
			out = append(out, canonicalUnder(home, s))
		}
	}
	return out
}

// canonicalUnder is canonical(base/rel) for a canonical base, found with
// one Lstat per component of rel instead of a full walk from the root for
// each (protected() runs on every run, for some thirty home secrets): the
// path is already canonical unless one of its components is a symlink,
// and then canonical decides.
func canonicalUnder(base, rel string) string {
	p := base
	for _, part := range strings.Split(rel, "/") {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			// Absent: nothing below it can be a symlink.
			return filepath.Join(base, rel)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return canonical(filepath.Join(base, rel))
		}
	}
	return p
}

// hidden returns the existing paths that open mode masks: the protected
// paths and the host service sockets, and for others (a root engine's
// sandbox user, which could otherwise read whatever a person left
// readable) the secret folders of every home on this machine that it may
// read or search: each mask costs a run a mount, and what the kernel
// keeps from that user needs none. A path that does not exist needs no
// mask (and bwrap could not mount over it).
func (p enginePaths) hidden(others *backends.Credential) []string {
	var out []string
	seen := map[string]bool{}
	sockets := make([]string, len(hostSockets))
	for i, s := range hostSockets {
		sockets[i] = canonical(s)
	}
	// protected() and the homes' secrets are canonical already: resolving
	// them again costs a walk of every path on each run and changes
	// nothing.
	paths := append(p.protected(), sockets...)
	if others != nil && p.homes != nil {
		// Accessible answers all of them when it cannot ask.
		secrets, _ := jailfs.Accessible(others, p.homes.secrets())
		paths = append(paths, secrets...)
	}
	for _, path := range paths {
		if seen[path] {
			continue
		}
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		seen[path] = true
		out = append(out, path)
	}
	return dropNested(out)
}

// dropNested removes paths that lie under another path of the list: a mask
// of the parent covers them, and a second mount under a masked directory
// would fail.
func dropNested(paths []string) []string {
	var out []string
	for _, p := range paths {
		nested := false
		for _, q := range paths {
			if p != q && within(p, q) {
				nested = true
				break
			}
		}
		if !nested {
			out = append(out, p)
		}
	}
	return out
}

// canonical resolves symlinks as far as the path exists, so that a link to
// a protected folder is recognised as that folder.
func canonical(path string) string {
	path = filepath.Clean(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	dir, base := filepath.Split(path)
	if dir == "" || dir == path {
		return path
	}
	return filepath.Join(canonical(filepath.Clean(dir)), base)
}

// within reports whether path is root or lies under it.
func within(path, root string) bool {
	if root == "/" {
		return true
	}
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}
