package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// systemTrees are where a sandbox may never write: a read-write mount of
// a folder in one (/etc/cron.d, /etc/systemd/system, /usr/local/bin,
// /var/lib/docker) would let sandboxed code, and the file API acting for
// it, change how this machine runs. macOS's are under /private and
// /System.
var systemTrees = []string{
	"/etc", "/usr", "/boot", "/var", "/opt", "/srv", "/sys", "/proc", "/dev", "/run",
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/nix",
	"/private/etc", "/private/var", "/System", "/Library",
}

// scratchTrees are the shared scratch space inside the system trees,
// which any user may write anyway.
var scratchTrees = []string{"/var/tmp", "/private/var/tmp", "/private/var/folders"}

// secretDirs are folders that hold someone's credentials wherever they
// are (another user's home included): a path through one is never given
// to a sandbox, nor a folder that holds one directly (a home directory).
var secretDirs = []string{".ssh", ".gnupg", ".aws", ".password-store"}

// engineLayouts are where SenClaw engines keep their database and token
// below a home directory (and a root engine's /var/lib/senclaw): a folder
// that ends any part of these paths holds another engine's dir.
var engineLayouts = []string{".local/share/senclaw/senclaw.db", ".config/senclaw/api-token", "lib/senclaw/senclaw.db"}

// engineMarks are the tails of engineLayouts: what a folder that holds an
// engine's dir has below it.
func engineMarks() []string {
	var out []string
	for _, l := range engineLayouts {
		parts := strings.Split(l, "/")
		for i := range parts[:len(parts)-1] {
			out = append(out, strings.Join(parts[i:], "/"))
		}
	}
	return out
}

// hostDirGuard judges host folders a sandbox is given: mount sources, the
// allowlist, an agent's project dir.
type hostDirGuard struct {
	paths enginePaths
	// allow is the mountAllow setting: folders the owner lets sandboxes
	// have although they are in a system tree or hold a host service.
	allow []string
}

// guard is the engine's hostDirGuard under the current settings.
func (e *Engine) guard() hostDirGuard {
	return hostDirGuard{paths: e.paths, allow: e.Settings().MountAllow}
}

// why says why real (a canonical, existing directory) may not be given
// to a sandbox, writable or not, and what to do; "" when it may. widened
// reports that it may only because mountAllow says so.
func (g hostDirGuard) why(real string, writable bool) (reason string, widened bool) {
	if r := g.private(real); r != "" {
		return r, false
	}
	r := g.hostOnly(real, writable)
	if r == "" {
		return "", false
	}
	for _, a := range g.allow {
		if within(real, a) {
			return "", true
		}
	}
	return r, false
}

// private refuses what is never given, whatever the settings: the
// engine's own dirs, secret folders (the engine's home's and anyone's),
// and other SenClaw engines' data and config dirs (their tokens would let
// the sandbox drive them).
func (g hostDirGuard) private(real string) string {
	for _, p := range g.paths.protected() {
		if within(real, p) {
			return fmt.Sprintf("is private to you or to senclaw (%s) and is never given to a sandbox", p)
		}
		if within(p, real) {
			return fmt.Sprintf("contains %s, which is private and never given to a sandbox; give a narrower folder", p)
		}
	}
	for _, part := range strings.Split(real, string(filepath.Separator)) {
		if slices.Contains(secretDirs, part) {
			return fmt.Sprintf("is inside a secret folder (%s) and is never given to a sandbox", part)
		}
	}
	for _, s := range secretDirs {
		if exists(filepath.Join(real, s)) {
			return fmt.Sprintf("holds the secret folder %s (a home directory?), which is never given to a sandbox; give a narrower folder", s)
		}
	}
	for dir := real; ; dir = filepath.Dir(dir) {
		if exists(filepath.Join(dir, "senclaw.db")) || (filepath.Base(dir) == "senclaw" && exists(filepath.Join(dir, "api-token"))) {
			return fmt.Sprintf("is inside the data or config dir of a SenClaw engine (%s), which is never given to a sandbox", dir)
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	for _, m := range engineMarks() {
		if exists(filepath.Join(real, m)) {
			return fmt.Sprintf("contains the data or config dir of a SenClaw engine (%s), which is never given to a sandbox; give a narrower folder", filepath.Join(real, filepath.Dir(m)))
		}
	}
	return ""
}

// hostOnly refuses what the owner may still allow with mountAllow: the
// host services' paths that open mode masks (Docker's data dir, service
// sockets), in any mount, and the system trees, for a writable one.
func (g hostDirGuard) hostOnly(real string, writable bool) string {
	const widen = "; if you accept that sandboxed code (and the file API acting for it) reaches it, add the folder to the mountAllow setting"
	for _, s := range hostSockets {
		s = canonical(s)
		if within(real, s) || within(s, real) {
			return fmt.Sprintf("is or holds %s, a path of this machine's services that open mode masks; give a folder of your own%s", s, widen)
		}
	}
	if !writable {
		return ""
	}
	for _, t := range scratchTrees {
		if within(real, t) {
			return ""
		}
	}
	for _, t := range systemTrees {
		if within(real, t) {
			return fmt.Sprintf("is inside the system tree %s, which a sandbox may never write (sandboxed code could change how this machine runs); mount it read-only, or give a folder of your own%s", t, widen)
		}
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// widenedNote names the sandbox's folders that only the mountAllow
// setting lets it have, for the create and update notes ("" for none).
func (e *Engine) widenedNote(sb *Sandbox) string {
	g := e.guard()
	var names []string
	for _, m := range sb.Mounts {
		if _, widened := g.why(m.Source, !m.ReadOnly); widened {
			mode := "read-write"
			if m.ReadOnly {
				mode = "read-only"
			}
			names = append(names, fmt.Sprintf("%s at %s (%s)", m.Source, m.Target, mode))
		}
	}
	if sb.Kind == "agent" {
		if _, widened := g.why(sb.Workspace, true); widened {
			names = append(names, sb.Workspace+" (the project dir, read-write)")
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "allowed only by the mountAllow setting, though the mount guard refuses them by default (a system tree or a path of this machine's services): " + strings.Join(names, ", ")
}

// checkStoredDirs judges the sandbox's folders again before a run: the
// guard or the mountAllow setting may have changed since they were
// saved, and a run must not get what a new sandbox would be refused.
func (e *Engine) checkStoredDirs(sb *Sandbox) error {
	g := e.guard()
	for i, m := range sb.Mounts {
		if why, _ := g.why(m.Source, !m.ReadOnly); why != "" {
			return badField(fmt.Sprintf("mounts[%d].source", i), m.Source, "%s; change the sandbox's mounts", why)
		}
	}
	if sb.Kind == "agent" {
		if why, _ := g.why(sb.Workspace, true); why != "" {
			return badField("projectDir", sb.Workspace, "%s", why)
		}
	}
	return nil
}
