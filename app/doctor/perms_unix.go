//go:build unix

package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/senclaw/sandbox/app/rundir"
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

// checkSandboxUser checks a root engine's sandbox uids: that its range
// is its own (no host process, account or subordinate range uses a uid
// of it that no sandbox holds), and that every persistent sandbox's own
// workspace belongs to that sandbox's uid, which must reach and write it.
func (d *Doctor) checkSandboxUser() []Check {
	e := d.opts.Engine
	uids, ok := e.UIDs()
	if d.opts.EUID != 0 || !ok {
		return nil // sandboxed code runs as the engine's own user
	}
	var out []Check
	r := Check{Name: "sandbox uids", Status: OK, Detail: fmt.Sprintf("each sandbox runs as a uid of its own from %s, which no host process uses", uids.Range)}
	move := fmt.Sprintf("senclaw settings set sandboxUidRange=%s (a block no account, subordinate range, process or other engine uses now; the sandboxes move to it with their files), then restart the engine", uids.Free)
	switch {
	case uids.Err != nil:
		r.Status, r.Detail = Fail, "no sandbox can run: "+uids.Err.Error()
		r.Fix = "move what overlaps off the range, or move this engine: " + move
	case len(uids.Conflicts) > 0:
		r.Status = Fail
		r.Detail = fmt.Sprintf("the sandbox range %s holds ids this machine gives others: %s; no new sandbox or run starts", uids.Range, strings.Join(uids.Conflicts, "; "))
		r.Fix = "move that account or range off it, or move this engine: " + move
	case len(uids.Foreign) > 0:
		var used []string
		for _, u := range uids.Foreign {
			used = append(used, fmt.Sprintf("uid %d by pid %d (%s)", u.UID, u.PID, u.Command))
		}
		r.Status = Warn
		r.Detail = fmt.Sprintf("host processes run as uids of the sandbox range %s that no sandbox of this engine has: %s; no sandbox gets those uids while they do (they were skipped at start), but they are not this engine's to share", uids.Range, strings.Join(used, ", "))
		r.Fix = "stop those processes or give them uids of their own (a system user from adduser --system), or move this engine: " + move
	case uids.Later != "":
		r.Status = Warn
		r.Detail = fmt.Sprintf("the sandbox range %s lies in %s: the day useradd gives an account ids of it, no sandbox runs until one of them moves", uids.Range, uids.Later)
		r.Fix = "move this engine now: " + move
	}
	out = append(out, r)

	c := Check{Name: "sandbox user", Status: OK}
	list, err := e.List()
	if err != nil {
		c.Status, c.Detail = Warn, "the sandboxes cannot be listed: "+err.Error()
		return append(out, c)
	}
	var bad []string
	var fixes []string
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
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && (sb.UID == 0 || st.Uid != sb.UID || fi.Mode().Perm()&0o700 != 0o700) {
			bad = append(bad, fmt.Sprintf("%s (%s) is uid %d, mode %04o; its sandbox runs as uid %d", sb.Workspace, sb.ID, st.Uid, fi.Mode().Perm(), sb.UID))
			if sb.UID != 0 {
				fixes = append(fixes, fmt.Sprintf("chown -R --from=%d %d:%d %s", st.Uid, sb.UID, sb.GID, sb.Workspace))
			}
		}
	}
	c.Detail = fmt.Sprintf("each of the %d persistent sandboxes' workspaces belongs to its own uid, which reaches and writes it", n)
	if len(bad) > 0 {
		c.Status = Fail
		c.Detail = fmt.Sprintf("sandboxes whose own uid cannot write their workspace: %v", bad)
		c.Fix = strings.Join(append(fixes, "chmod 0711 the data dir and its workspaces dir"), "; ")
	}
	return append(out, c)
}

func ownerOf(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// checkConfigDir checks the config dir (the engine's own, no one else may
// write it) and the API token in it (the engine's own, 0600): another
// user who could write either could replace the token and so read, or
// make, the owner's requests.
func (d *Doctor) checkConfigDir() []Check {
	if d.opts.ConfigDir == "" {
		return nil
	}
	var out []Check
	for _, f := range []struct {
		path     string
		bad      os.FileMode
		want     string
		required bool
	}{{d.opts.ConfigDir, 0o022, "0700", true}, {filepath.Join(d.opts.ConfigDir, "api-token"), 0o077, "0600", false}} {
		c := Check{Name: "permissions", Status: OK}
		fi, err := os.Lstat(f.path)
		if err != nil {
			if !f.required && os.IsNotExist(err) {
				continue
			}
			c.Status, c.Detail, c.Fix = Warn, err.Error(), "the engine makes it when it starts: senclaw stop, then any senclaw command"
			out = append(out, c)
			continue
		}
		c.Detail = fmt.Sprintf("%s is %04o", f.path, fi.Mode().Perm())
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			c.Status, c.Fix = Fail, fmt.Sprintf("%s is a link: replace it with the file or folder itself (another user could have made it)", f.path)
		case ownerOf(fi) != d.opts.EUID:
			c.Status, c.Fix = Fail, fmt.Sprintf("chown %d %s (it must be the engine's own; if you did not make it, remove it: another user may have)", d.opts.EUID, f.path)
			c.Detail += fmt.Sprintf(", owned by %s, not the engine's uid %d", rundir.UserName(ownerOf(fi)), d.opts.EUID)
		case fi.Mode().Perm()&f.bad != 0:
			c.Status, c.Fix = Fail, fmt.Sprintf("chmod %s %s (others may read or change it now)", f.want, f.path)
		}
		out = append(out, c)
	}
	return out
}
