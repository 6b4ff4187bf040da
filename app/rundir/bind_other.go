//go:build unix && !linux

package rundir

import (
	"fmt"
	"path/filepath"
)

// bindPath is the folder's path when it still leads to the folder held
// (there is no /proc/self/fd to bind through); Listen checks what was
// bound.
func (d *Dir) bindPath(name string) (string, error) {
	if d.sameFolder(d.Path) {
		return filepath.Join(d.Path, name), nil
	}
	return "", fmt.Errorf("the runtime dir %s is no longer the folder senclaw checked; start senclaw again", d.Path)
}
