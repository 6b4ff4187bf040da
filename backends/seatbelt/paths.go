package seatbelt

import (
	"fmt"
	"path"
	"strings"
)

// firmlinks are the top-level names macOS keeps under /private and shows
// at the root through symbolic links. Seatbelt matches the real path of a
// file, so a rule must name /private/tmp, not /tmp.
var firmlinks = []string{"/tmp", "/var", "/etc"}

// canon turns p (what names it: "workspace", "mount source") into the path
// Seatbelt will see: absolute, without "." or "..", resolved by the host
// as far as it exists, with /tmp, /var and /etc spelled /private/....
// A ".." is refused rather than resolved: "/a/link/.." means different
// things lexically and on the disk, and the profile must not guess.
func canon(what, p string, resolve func(string) string) (string, error) {
	if p == "" || !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("seatbelt: the %s %q is not an absolute path", what, p)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("seatbelt: the %s %q contains a NUL byte", what, p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("seatbelt: the %s %q contains \"..\"; give the path without it", what, p)
		}
	}
	c := path.Clean(p)
	if resolve != nil {
		r := resolve(c)
		if r == "" || !strings.HasPrefix(r, "/") {
			return "", fmt.Errorf("seatbelt: the %s %q does not resolve to an absolute path (got %q)", what, p, r)
		}
		c = path.Clean(r)
	}
	return privateSpelling(c), nil
}

// privateSpelling maps /tmp, /var and /etc (and what is under them) to
// their real place under /private.
func privateSpelling(p string) string {
	for _, f := range firmlinks {
		if p == f || strings.HasPrefix(p, f+"/") {
			return "/private" + p
		}
	}
	return p
}

// otherSpelling is the short spelling of a /private/{tmp,var,etc} path, or
// "" when it has none. Denies are written in both spellings.
func otherSpelling(p string) string {
	for _, f := range firmlinks {
		if long := "/private" + f; p == long || strings.HasPrefix(p, long+"/") {
			return strings.TrimPrefix(p, "/private")
		}
	}
	return ""
}

// within reports whether p is root or inside it.
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// ancestors lists the directories above p, nearest first, without "/".
func ancestors(p string) []string {
	var out []string
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		out = append(out, d)
	}
	return out
}
