package landlock

import (
	"path"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// Access is what a Grant allows beneath its path.
type Access string

const (
	// Read allows reading files and directories and executing files.
	Read Access = "read"
	// ReadWrite allows everything Read does, and making, writing,
	// truncating, renaming and removing files and directories.
	ReadWrite Access = "read-write"
	// Device allows reading and writing one device file (/dev/null).
	Device Access = "device"
)

// Grant is one Landlock rule: access beneath Path, a directory (Dir) or a
// single file.
type Grant struct {
	Path   string `json:"path"`
	Dir    bool   `json:"dir"`
	Access Access `json:"access"`
}

// Entry is one directory entry as Grants needs it.
type Entry struct {
	Name    string
	Dir     bool
	Symlink bool
}

// Lister lists a directory; an error leaves the whole directory out.
type Lister func(dir string) ([]Entry, error)

// Host is what Grants needs to know of the machine beyond the Spec. Start
// fills it in from the disk (paths canonical, no symlink in them); tests
// write it by hand.
type Host struct {
	// Roots are the system roots strict and allowlist sandboxes read
	// (backends.SystemRoots resolved to their real directories, deduped).
	Roots []string
	// ReadPaths are the allowlist entries, resolved.
	ReadPaths []string
	// Hidden and Masked are Spec.Hidden and Spec.Masked, resolved.
	Hidden []string
	Masked []string
	// Files are single files the run reads besides (the proxy preload).
	Files []string
}

// devices are the device files every run may read and write; the rest of
// /dev is out of reach, as under bwrap's --dev.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// private are host trees open mode leaves out although it reads the whole
// disk: bwrap gives a sandbox its own /tmp, /dev and /run instead (the
// host's /run holds services' sockets and runtime secrets; its /tmp other
// users' files). Without a mount namespace a Landlock sandbox has none of
// them; TMPDIR is in the workspace.
var private = []string{"/dev", "/run", "/tmp"}

// Grants turns spec's fs mode into Landlock rules: a pure function of spec,
// host and the directory listings list returns. Writes: the workspace,
// the read-write mounts and a host exec's write paths. Reads: in strict and allowlist the system roots
// (and the allowlist) and the mounts; in open the whole disk except the
// hidden paths. Landlock can only allow, never carve out, so a tree that
// holds a hidden or masked path is granted as its entries, one by one,
// along the way down to each excluded path and without it (the sibling
// set). Symbolic links among the entries are left out: a path through one
// is checked where it leads. /proc is readable in every mode.
func Grants(spec *backends.Spec, host Host, list Lister) []Grant {
	var out []Grant
	readAll := func(roots, excluded []string) {
		for _, r := range outermost(roots) {
			out = append(out, readTree(r, excluded, list)...)
		}
	}
	switch spec.FsMode {
	case backends.FsOpen:
		excluded := slices.Concat(host.Masked, host.Hidden, private, []string{"/proc"})
		readAll([]string{"/"}, excluded)
		// System roots that live in the private trees (NixOS's
		// /run/current-system) come back.
		var back []string
		for _, r := range host.Roots {
			if under(r, private) {
				back = append(back, r)
			}
		}
		readAll(back, host.Masked)
	case backends.FsAllowlist:
		readAll(slices.Concat(host.Roots, host.ReadPaths), host.Masked)
	default:
		readAll(host.Roots, host.Masked)
	}
	// Mounts are seen wherever they are, hidden trees included, as
	// under bwrap; only the masked programs stay out of them.
	var ro []string
	for _, m := range spec.Mounts {
		if m.ReadOnly {
			ro = append(ro, m.Source)
		}
	}
	readAll(ro, host.Masked)
	out = append(out, Grant{Path: "/proc", Dir: true, Access: Read})
	for _, d := range devices {
		out = append(out, Grant{Path: d, Access: Device})
	}
	for _, f := range host.Files {
		out = append(out, Grant{Path: f, Access: Read})
	}
	out = append(out, Grant{Path: spec.Workspace, Dir: true, Access: ReadWrite})
	for _, m := range spec.Mounts {
		if !m.ReadOnly {
			out = append(out, Grant{Path: m.Source, Dir: true, Access: ReadWrite})
		}
	}
	for _, w := range spec.WritePaths {
		out = append(out, Grant{Path: w, Dir: true, Access: ReadWrite})
	}
	return out
}

// Unmaskable returns the first of masked that lies in a tree the run may
// write (the workspace, a read-write mount): Landlock cannot take a file
// out of such a tree, whose directories must stay writable, so a run
// with one is refused.
func Unmaskable(spec *backends.Spec, masked []string) (string, bool) {
	writable := []string{spec.Workspace}
	for _, m := range spec.Mounts {
		if !m.ReadOnly {
			writable = append(writable, m.Source)
		}
	}
	writable = append(writable, spec.WritePaths...)
	for _, p := range masked {
		if under(p, writable) {
			return p, true
		}
	}
	return "", false
}

// readTree grants Read beneath root except the excluded paths: root
// itself when none is in it, nothing when root is excluded, else each
// entry of root apart from the excluded ones, going down into those that
// hold an excluded path.
func readTree(root string, excluded []string, list Lister) []Grant {
	var inside []string
	for _, e := range excluded {
		if e == root || (root == "/" && e != "/") || strings.HasPrefix(e, root+"/") {
			inside = append(inside, e)
		}
	}
	if len(inside) == 0 {
		return []Grant{{Path: root, Dir: true, Access: Read}}
	}
	if slices.Contains(inside, root) {
		return nil
	}
	entries, err := list(root)
	if err != nil {
		return nil // fail closed: nothing of a directory we cannot see
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	var out []Grant
	for _, e := range entries {
		if e.Symlink || e.Name == "" || e.Name == "." || e.Name == ".." || strings.Contains(e.Name, "/") {
			continue
		}
		p := path.Join(root, e.Name)
		switch {
		case e.Dir:
			out = append(out, readTree(p, inside, list)...)
		case !slices.Contains(inside, p):
			out = append(out, Grant{Path: p, Access: Read})
		}
	}
	return out
}

// outermost drops the paths that lie inside another one of paths (a
// grant of the outer one covers them), and duplicates; the rest stay in
// their order.
func outermost(paths []string) []string {
	var out []string
	for i, p := range paths {
		covered := false
		for j, q := range paths {
			if i != j && p != q && under(p, []string{q}) {
				covered = true
				break
			}
			if j < i && p == q {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
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
