package app

import (
	"errors"

	"github.com/senclaw/sandbox/backends"
)

// chownTree needs Unix: no engine runs as root here.
func chownTree(dir string, from, to backends.Credential) (changed, skipped int, err error) {
	return 0, 0, errors.New("changing owners needs Unix")
}
