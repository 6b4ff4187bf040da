package windows

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// shortName matches an 8.3 short name component such as PROGRA~1 or
// DOCUME~2.TXT: two spellings of one folder would let a deny written for
// one miss the other.
var shortName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[^~]{1,6}~[0-9]+(\.[^.]{1,3})?$`) })

// reservedNames are device names that name no file in any folder.
var reservedNames = []string{"con", "prn", "aux", "nul", "conin$", "conout$",
	"com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8", "com9",
	"lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9"}

// Normalize turns p into the one spelling the plan uses: a drive letter,
// backslashes, no "." components, no trailing separator, and case folded
// (NTFS folders are matched without regard to case, so the plan compares
// folded paths). It refuses what has more than one meaning or reaches
// past the file system: alternate data streams (a ":" after the drive),
// \\?\ and \\.\ device paths, UNC shares, "..", 8.3 short names, device
// names, and components ending in a dot or a space (Windows drops those,
// so "secret." is "secret").
func Normalize(what, p string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("windows: the %s %q %s", what, p, why)
	}
	if strings.ContainsRune(p, 0) {
		return "", bad("contains a NUL byte")
	}
	s := strings.ReplaceAll(p, "/", `\`)
	switch {
	case strings.HasPrefix(s, `\\?\`) || strings.HasPrefix(s, `\\.\`) || strings.HasPrefix(s, `\??\`):
		return "", bad(`is a \\?\ or device path; give a plain path such as C:\Users\ann\project`)
	case strings.HasPrefix(s, `\\`):
		return "", bad("is a network (UNC) path; only local folders can be confined")
	}
	if len(s) < 3 || !isLetter(s[0]) || s[1] != ':' || s[2] != '\\' {
		return "", bad(`is not an absolute path with a drive letter (C:\...)`)
	}
	if strings.Contains(s[2:], ":") {
		return "", bad("names an alternate data stream (a \":\" after the drive)")
	}
	var parts []string
	for _, c := range strings.Split(s[3:], `\`) {
		switch {
		case c == "" || c == ".":
			continue
		case c == "..":
			return "", bad(`contains ".."; give the path without it`)
		case strings.HasSuffix(c, ".") || strings.HasSuffix(c, " "):
			return "", bad(fmt.Sprintf("has the component %q, which ends in a dot or a space that Windows drops", c))
		case strings.ContainsAny(c, `<>"|?*`) || hasControl(c):
			return "", bad(fmt.Sprintf("has the component %q with a character Windows does not allow in names", c))
		case shortName().MatchString(c):
			return "", bad(fmt.Sprintf("has the component %q, an 8.3 short name; give the long name", c))
		case isReserved(c):
			return "", bad(fmt.Sprintf("has the component %q, a device name", c))
		}
		parts = append(parts, c)
	}
	return strings.ToLower(s[:1]) + `:\` + strings.ToLower(strings.Join(parts, `\`)), nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 {
			return true
		}
	}
	return false
}

func isReserved(c string) bool {
	base, _, _ := strings.Cut(strings.ToLower(c), ".")
	for _, r := range reservedNames {
		if base == r {
			return true
		}
	}
	return false
}

// within reports whether p is root or inside it (both normalized).
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, `\`)+`\`)
}
