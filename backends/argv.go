package backends

import (
	"os"
	"path/filepath"
	"strings"
)

// ShellJoin renders an argument vector the way a shell would read it back:
// plain words as they are, anything else in single quotes. Records and
// traces show commands with it.
func ShellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			parts[i] = a
		} else {
			parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(parts, " ")
}

// FindExecutable looks name up in the directories of pathList (a PATH
// value) and returns the first executable file found; a name with a slash
// is returned as it is. ok is false when there is none.
func FindExecutable(name, pathList string) (path string, ok bool) {
	if strings.Contains(name, "/") {
		return name, true
	}
	for _, dir := range filepath.SplitList(pathList) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}
