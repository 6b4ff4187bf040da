package rundir

import (
	"fmt"
	"path/filepath"
)

// bindPath is the address to bind name at: through /proc/self/fd, the
// folder's own descriptor, so that no link in the path can redirect the
// bind (the address is also short, whatever the folder's path). Without
// /proc, the folder's path, when it still leads to the folder held.
func (d *Dir) bindPath(name string) (string, error) {
	viaFD := fmt.Sprintf("/proc/self/fd/%d", d.fd)
	if d.sameFolder(viaFD) {
		return viaFD + "/" + name, nil
	}
	if d.sameFolder(d.Path) {
		return filepath.Join(d.Path, name), nil
	}
	return "", fmt.Errorf("the runtime dir %s is no longer the folder senclaw checked; start senclaw again", d.Path)
}
