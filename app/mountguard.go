package app

import (
	"encoding/json"
	"fmt"
	"github.com/senclaw/sandbox/app/store"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	// tenantDir, for a tenant's sandbox, is the tenant's own directory
	// (canonical): it lies in the data dir, and is given to that
	// tenant's sandboxes alone.
	tenantDir string
	// hostRun are the folders of Space Apps that run in place with no
	// sandbox (canonical): what a sandbox wrote there would run on this
	// machine, unconfined, at the app's next start.
	hostRun []string
}

// guard is the engine's hostDirGuard under the current settings.
func (e *Engine) guard() hostDirGuard {
	return hostDirGuard{paths: e.paths, allow: e.Settings().MountAllow, hostRun: e.unsandboxedAppDirs()}
}

// unsandboxedAppDirs are the folders of the Space Apps that run in place
// with no sandbox. They are kept in memory, as the records are stored:
// the guard is asked inside the store's transactions too, where a read
// of the store would wait for itself.
func (e *Engine) unsandboxedAppDirs() []string { return e.hostRun.dirs() }

// hostRunApps are the in-place folders of the Space Apps without a
// sandbox, by app id, from their stored records.
type hostRunApps struct {
	mu sync.Mutex
	by map[string]string
}

func (h *hostRunApps) load(st *store.Store) error {
	return st.EachApp(func(data []byte) error {
		var id struct {
			Manifest struct {
				ID string `json:"id"`
			} `json:"manifest"`
		}
		if json.Unmarshal(data, &id) == nil && id.Manifest.ID != "" {
			h.put(id.Manifest.ID, data)
		}
		return nil
	})
}

// put records app id's stored document (nil: removed).
func (h *hostRunApps) put(id string, data []byte) {
	var rec struct {
		Dir     string `json:"dir"`
		InPlace bool   `json:"inPlace"`
		Sandbox struct {
			Enabled bool `json:"enabled"`
		} `json:"sandbox"`
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by == nil {
		h.by = map[string]string{}
	}
	delete(h.by, id)
	if data != nil && json.Unmarshal(data, &rec) == nil && rec.InPlace && !rec.Sandbox.Enabled && rec.Dir != "" {
		h.by[id] = canonical(rec.Dir)
	}
}

func (h *hostRunApps) dirs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.by))
	for _, d := range h.by {
		out = append(out, d)
	}
	return out
}

// hostRunWhy says why real may not be written: it is, lies in or holds
// the folder of a Space App that runs with no sandbox; "" when not.
func (g hostDirGuard) hostRunWhy(real string) string {
	for _, d := range g.hostRun {
		if within(real, d) || within(d, real) {
			return fmt.Sprintf("is or holds %s, the folder of a Space App that runs with no sandbox: what a sandbox wrote there would run on this machine, unconfined, at the app's next start; mount it read-only, or give the app a sandbox (senclaw apps sandbox --enabled on ID)", d)
		}
	}
	return ""
}

// why says why real (a canonical, existing directory) may not be given
// to a sandbox, writable or not, and what to do; "" when it may. widened
// reports that it may only because mountAllow says so.
func (g hostDirGuard) why(real string, writable bool) (reason string, widened bool) {
	if writable {
		if r := g.hostRunWhy(real); r != "" {
			return r, false
		}
	}
	if g.tenantDir != "" && within(real, g.tenantDir) && real != g.tenantDir {
		return "", false
	}
	homes := g.paths.homes.view()
	if r := g.private(real, homes); r != "" {
		return r, false
	}
	r := g.hostOnly(real, writable, homes)
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
func (g hostDirGuard) private(real string, homes homesView) string {
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
	for _, s := range homes.secrets {
		if within(real, s) {
			return fmt.Sprintf("is inside %s, a secret folder (or a SenClaw engine's dir) of a home on this machine, which is never given to a sandbox", s)
		}
		if within(s, real) {
			return fmt.Sprintf("holds %s, a secret folder (or a SenClaw engine's dir) of a home on this machine, which is never given to a sandbox; give a narrower folder", s)
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
func (g hostDirGuard) hostOnly(real string, writable bool, homes homesView) string {
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
	if r := loginPlaceWhy(real, homes.places); r != "" {
		return r + widen
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

// loginPlaceWhy says why real may not be written because of a login
// place of a home (homes.go): it is a home itself, lies in a place that
// counts whole, is a place, or holds one (a read-write /home holds every
// home); "" when none.
func loginPlaceWhy(real string, places []placePath) string {
	const runs = "from which programs on this machine run code at login or from PATH, so a sandbox may never write it"
	for _, p := range places {
		name := "~" + p.home.user
		if rel, err := filepath.Rel(p.home.dir, p.path); err != nil || strings.HasPrefix(rel, "..") {
			name = "a link in " + name // a place that leads out of its home
		} else if rel != "." {
			name += "/" + rel
		}
		switch {
		case real == p.home.dir && p.path == p.home.dir:
			return fmt.Sprintf("is the home directory %s: the shell's start files in it (.bashrc, .profile) run at every login, so a sandbox may never write it; give a folder inside it, or mount it read-only", name)
		case real == p.path || p.whole && within(real, p.path):
			return fmt.Sprintf("is in %s (%s), %s; mount it read-only, or give a folder of your own", p.path, name, runs)
		case within(p.path, real):
			return fmt.Sprintf("holds %s (%s), %s; give a narrower folder", p.path, name, runs)
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
	g := e.guardFor(sb.Tenant)
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
	return "allowed only by the mountAllow setting, though the mount guard refuses them by default (a system tree, a path of this machine's services, or a home's folder that runs code at login or from PATH): " + strings.Join(names, ", ")
}

// checkStoredDirs judges the sandbox's folders again before a run: the
// guard or the mountAllow setting may have changed since they were
// saved, and a run must not get what a new sandbox would be refused.
func (e *Engine) checkStoredDirs(sb *Sandbox) error {
	g := e.guardFor(sb.Tenant)
	for i, m := range sb.Mounts {
		if why, _ := g.why(m.Source, !m.ReadOnly); why != "" {
			return badField(fmt.Sprintf("mounts[%d].source", i), m.Source, "%s; change the sandbox's mounts", why)
		}
		// A path the owner granted the tenant may have been taken back.
		if _, err := e.checkTenantDir(fmt.Sprintf("mounts[%d].source", i), m.Source, sb.Tenant, !m.ReadOnly); err != nil {
			return err
		}
	}
	if sb.Kind == "agent" {
		if why, _ := g.why(sb.Workspace, true); why != "" {
			return badField("projectDir", sb.Workspace, "%s", why)
		}
	}
	return nil
}
