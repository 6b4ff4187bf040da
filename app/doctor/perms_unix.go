//go:build unix

package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// checkDataDir checks the data dir and its workspaces dir (0711: no one
// else may list them, a root engine's sandbox user must traverse them),
// and the store file (0600), all the engine's own.
func (d *Doctor) checkDataDir() []Check {
	var out []Check
	for _, f := range []struct {
		path string
		want os.FileMode
	}{{d.opts.DataDir, 0o711}, {filepath.Join(d.opts.DataDir, "workspaces"), 0o711}, {d.storePath(), 0o600}} {
		c := Check{Name: "permissions", Status: OK}
		fi, err := os.Lstat(f.path)
		if err != nil {
			c.Status, c.Detail, c.Fix = Fail, err.Error(), "the engine makes it when it starts: senclaw stop, then any senclaw command"
			out = append(out, c)
			continue
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		mode := fi.Mode().Perm()
		c.Detail = fmt.Sprintf("%s is %04o", f.path, mode)
		switch {
		case st != nil && int(st.Uid) != d.opts.EUID:
			c.Status, c.Fix = Fail, fmt.Sprintf("chown %d %s (it must be the engine's own)", d.opts.EUID, f.path)
			c.Detail += fmt.Sprintf(", owned by uid %d, not the engine's %d", st.Uid, d.opts.EUID)
		case mode&0o022 != 0 || fi.Mode()&os.ModeSymlink != 0:
			c.Status, c.Fix = Fail, fmt.Sprintf("chmod %04o %s (others may change it now)", f.want, f.path)
		case mode != f.want:
			c.Status, c.Fix = Warn, fmt.Sprintf("chmod %04o %s", f.want, f.path)
		}
		out = append(out, c)
	}
	return out
}

// checkSandboxUser checks that a root engine's sandbox user can reach
// and write every persistent sandbox's own workspace.
func (d *Doctor) checkSandboxUser() []Check {
	e := d.opts.Engine
	if d.opts.EUID != 0 {
		return nil // sandboxed code runs as the engine's own user
	}
	s := e.Settings()
	c := Check{Name: "sandbox user", Status: OK}
	list, err := e.List()
	if err != nil {
		c.Status, c.Detail = Warn, "the sandboxes cannot be listed: "+err.Error()
		return []Check{c}
	}
	var bad []string
	n := 0
	for _, sb := range list {
		if !sb.OwnWorkspace || sb.Kind == "oneshot" {
			continue
		}
		n++
		fi, err := os.Stat(sb.Workspace)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s (%s): %v", sb.Workspace, sb.ID, err))
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && (st.Uid != s.SandboxUID || fi.Mode().Perm()&0o700 != 0o700) {
			bad = append(bad, fmt.Sprintf("%s (%s) is uid %d, mode %04o", sb.Workspace, sb.ID, st.Uid, fi.Mode().Perm()))
		}
	}
	c.Detail = fmt.Sprintf("uid %d reaches and writes the %d persistent sandboxes' workspaces", s.SandboxUID, n)
	if len(bad) > 0 {
		c.Status = Fail
		c.Detail = fmt.Sprintf("the sandbox user (uid %d) cannot write: %v", s.SandboxUID, bad)
		c.Fix = fmt.Sprintf("chown -R %d:%d on each, and chmod 0711 the data dir and its workspaces dir", s.SandboxUID, s.SandboxGID)
	}
	return []Check{c}
}
