package seatbelt

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// Host is what Profile needs to know about the machine. Start fills it in
// on macOS; tests write it by hand.
type Host struct {
	// Home is the engine user's home: the secret folders are under it.
	Home string
	// CacheDir is the user's cache folder (~/Library/Caches): other
	// programs' sessions and tokens live there, so it is never readable.
	CacheDir string
	// TempDir is the run's private TMPDIR, made for this run (writable).
	// "" when the run's TMPDIR lies in the workspace.
	TempDir string
	// Prefixes are the installation prefixes of the interpreters found on
	// the run's PATH (a pyenv or nvm version outside the system roots).
	Prefixes []string
	// Resolve returns the real path of p: that of its deepest existing
	// ancestor, with the rest appended. nil resolves nothing.
	Resolve func(p string) string
	// GitRepo reports whether dir holds a .git directory.
	GitRepo func(dir string) bool
}

// Param is one -D KEY=VALUE definition: a path enters the profile only
// this way, never as text.
type Param struct {
	Key   string
	Value string
}

// SystemRoots are what strict and allowlist sandboxes read so that
// programs and their libraries work.
func SystemRoots() []string {
	return []string{"/usr", "/bin", "/sbin", "/System", "/Library", "/opt/homebrew", "/usr/local", "/private/etc",
		"/Applications/Xcode.app/Contents/Developer"}
}

// macSecrets are the folders under the home directory that hold
// credentials, browser profiles and keychains, denied in every mode.
var macSecrets = []string{
	".ssh", ".aws", ".gnupg", ".config/gcloud", ".kube", ".docker", ".netrc", ".azure", ".config/gh",
	".git-credentials", ".npmrc", ".pypirc", ".password-store", ".vault-token", ".senclaw",
	"Library/Keychains", "Library/Cookies", "Library/Application Support/Google/Chrome",
	"Library/Application Support/Firefox", "Library/Application Support/BraveSoftware",
	"Library/Application Support/Microsoft Edge", "Library/Safari", "Library/Mail", "Library/Messages",
	"Library/Application Support/com.apple.TCC",
}

// Parameter key prefixes. The structure checker (sbeval) knows them: HIDE
// keys are the secret denies.
const (
	keyWorkspace = "WORKSPACE"
	keyTemp      = "TMPDIR"
	keyPrefix    = "PREFIX"
	keyRead      = "READ"
	keyMount     = "MOUNT"
	keyHooks     = "HOOKS"
	keyProtect   = "PROTECT"
	keyMask      = "MASK"
	keyHide      = "HIDE"
	keyHideUp    = "HIDE_UP"
	keyHideDir   = "HIDE_DIR"
)

// Profile builds the Seatbelt profile for spec and the parameters it
// refers to. It is a pure function of spec and host: no exec, no
// environment, no disk. Seatbelt applies the last rule that matches, so the
// order is part of the meaning: the baseline, reads, writes, read-only
// places inside writable ones, the network, then the denies that must win
// over everything before them (masked programs, secret folders).
func Profile(spec *backends.Spec, host Host) (string, []Param, error) {
	p, err := plan(spec, host)
	if err != nil {
		return "", nil, err
	}
	w := &writer{}
	w.line("(version 1)")
	w.line("(deny default)")
	w.text(baseline)
	p.readRules(w, spec.FsMode)
	p.writeRules(w)
	networkRules(w, spec)
	p.denyRules(w)
	return w.b.String(), w.params, nil
}

// paths is spec's paths, canonical, as the profile uses them.
type paths struct {
	workspace string
	temp      string
	prefixes  []string
	reads     []string
	mounts    []mount
	masked    []string
	hidden    []string
	// protected are the agents' and git's files of the person's folders
	// (spec.Protected): writes denied, whether they exist or not.
	protected []string
}

type mount struct {
	source   string
	readOnly bool
	repo     bool
}

func plan(spec *backends.Spec, host Host) (*paths, error) {
	if !spec.FsMode.Valid() {
		return nil, fmt.Errorf("seatbelt: invalid fs mode %q", spec.FsMode)
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, fmt.Errorf("seatbelt: invalid argv %q: empty command", spec.Argv)
	}
	var p paths
	var err error
	if p.workspace, err = canon("workspace", spec.Workspace, host.Resolve); err != nil {
		return nil, err
	}
	if p.workspace == "/" {
		return nil, fmt.Errorf("seatbelt: invalid workspace %q: the root cannot be the workspace", spec.Workspace)
	}
	if host.TempDir != "" {
		if p.temp, err = canon("private TMPDIR", host.TempDir, host.Resolve); err != nil {
			return nil, err
		}
	}
	for _, d := range host.Prefixes {
		c, err := canon("interpreter prefix", d, host.Resolve)
		if err != nil {
			return nil, err
		}
		p.prefixes = appendNew(p.prefixes, c)
	}
	if spec.FsMode == backends.FsAllowlist {
		for _, r := range spec.ReadPaths {
			c, err := canon("allowlist path", r, host.Resolve)
			if err != nil {
				return nil, err
			}
			p.reads = appendNew(p.reads, c)
		}
	}
	for _, m := range spec.Mounts {
		src, err := canon("mount source", m.Source, host.Resolve)
		if err != nil {
			return nil, err
		}
		if err := checkTarget(spec.Workspace, m, src, host.Resolve); err != nil {
			return nil, err
		}
		repo := host.GitRepo != nil && host.GitRepo(src)
		p.mounts = append(p.mounts, mount{source: src, readOnly: m.ReadOnly, repo: repo})
	}
	for _, m := range spec.Protected {
		c, err := canon("protected path", m, host.Resolve)
		if err != nil {
			return nil, err
		}
		p.protected = appendNew(p.protected, c)
	}
	for _, m := range spec.Masked {
		c, err := canon("masked program", m, host.Resolve)
		if err != nil {
			return nil, err
		}
		p.masked = appendNew(p.masked, c)
	}
	var secrets []string
	if host.Home != "" {
		for _, s := range macSecrets {
			secrets = append(secrets, path.Join(host.Home, s))
		}
	}
	if host.CacheDir != "" {
		secrets = append(secrets, host.CacheDir)
	}
	for _, h := range append(slices.Clone(spec.Hidden), secrets...) {
		c, err := canon("hidden path", h, host.Resolve)
		if err != nil {
			return nil, err
		}
		p.hidden = appendNew(p.hidden, c)
	}
	p.hidden = outermost(p.hidden)
	// The engine may put a workspace inside its own (hidden) data dir,
	// and the denies leave it out. A granted place inside a secret folder
	// is another matter: refused, not carved out.
	for _, g := range p.granted() {
		for _, s := range secrets {
			if c, _ := canon("secret", s, host.Resolve); c != "" && within(g, c) {
				return nil, fmt.Errorf("seatbelt: %s lies inside the secret folder %s, which no sandbox may see; give another folder", g, c)
			}
		}
	}
	return &p, nil
}

// checkTarget makes sure that the mount is found, inside the sandbox, at
// its own source: Seatbelt confines paths and cannot remap them, so
// W/target must lead to the source itself (Start links it there).
func checkTarget(workspace string, m backends.Mount, src string, resolve func(string) string) error {
	t := m.Target
	if t == "" || path.IsAbs(t) || path.Clean(t) != t || t == ".." || strings.HasPrefix(t, "../") {
		return fmt.Errorf("seatbelt: invalid mount target %q: must be a clean path inside the workspace", t)
	}
	at := path.Join(workspace, t)
	got := at
	if resolve != nil {
		got = resolve(at)
	}
	if privateSpelling(path.Clean(got)) != src {
		return fmt.Errorf("seatbelt: the mount %s cannot appear at %s: Seatbelt cannot remap paths, so a mount's target must be its source (%s leads to %s); the backend links the target to the source before each run, so a real file or folder there is in the way: remove it", m.Source, at, at, got)
	}
	return nil
}

// granted are the places the profile opens beyond the system: the
// workspace, the private TMPDIR, the mounts and the allowlist.
func (p *paths) granted() []string {
	g := []string{p.workspace}
	if p.temp != "" {
		g = append(g, p.temp)
	}
	for _, m := range p.mounts {
		g = append(g, m.source)
	}
	return append(g, p.reads...)
}

func (p *paths) readRules(w *writer, mode backends.FsMode) {
	w.line("; reads")
	if mode == backends.FsOpen {
		w.line("(allow file-read* file-map-executable)")
	} else {
		for _, r := range SystemRoots() {
			w.line(`(allow file-read* file-map-executable (subpath "` + r + `"))`)
		}
		for _, d := range p.prefixes {
			w.rule("allow", "file-read* file-map-executable", subpath(w.param(keyPrefix, d)))
		}
		for _, r := range p.reads {
			w.rule("allow", "file-read*", subpath(w.param(keyRead, r)))
		}
	}
	w.rule("allow", "file-read* file-map-executable", subpath(w.paramOnce(keyWorkspace, p.workspace)))
	if p.temp != "" {
		w.rule("allow", "file-read*", subpath(w.paramOnce(keyTemp, p.temp)))
	}
	for i, m := range p.mounts {
		w.rule("allow", "file-read* file-map-executable", subpath(w.paramOnce(mountKey(i), m.source)))
	}
}

func (p *paths) writeRules(w *writer) {
	w.line("; writes")
	var roots []string
	w.rule("allow", "file-write*", subpath(w.paramOnce(keyWorkspace, p.workspace)))
	roots = append(roots, p.workspace)
	if p.temp != "" {
		w.rule("allow", "file-write*", subpath(w.paramOnce(keyTemp, p.temp)))
		roots = append(roots, p.temp)
	}
	for i, m := range p.mounts {
		if !m.readOnly {
			w.rule("allow", "file-write*", subpath(w.paramOnce(mountKey(i), m.source)))
			roots = append(roots, m.source)
		}
	}
	// A read-only mount inside a writable one stays read-only, and the
	// hooks of a mounted repository are not writable: git runs them
	// outside the sandbox.
	w.line("; read-only places inside writable ones")
	for i, m := range p.mounts {
		if m.readOnly && slices.ContainsFunc(roots, func(r string) bool { return within(m.source, r) }) {
			w.rule("deny", "file-write*", subpath(w.paramOnce(mountKey(i), m.source)))
		}
	}
	for _, m := range p.mounts {
		if m.repo && !m.readOnly {
			w.rule("deny", "file-write*", subpath(w.param(keyHooks, m.source+"/.git/hooks")))
		}
	}
	// What programs on this machine run code from in the person's
	// folders: neither written nor made (a path rule holds whether the
	// file exists or not).
	for _, pr := range p.protected {
		w.rule("deny", "file-write*", subpath(w.param(keyProtect, pr)))
	}
}

// carved are the granted places a deny may leave out when they lie inside
// a hidden folder: only the workspace and the private TMPDIR, which the
// engine itself puts there (its data dir). A mount or an allowlist path
// inside a hidden folder stays denied.
func (p *paths) carved() []string {
	if p.temp != "" {
		return []string{p.workspace, p.temp}
	}
	return []string{p.workspace}
}

// denyRules come last so that they win over every allow before them.
func (p *paths) denyRules(w *writer) {
	w.line("; masked programs")
	for _, m := range p.masked {
		for _, s := range spellings(m) {
			w.rule("deny", "file-read* process-exec", literal(w.param(keyMask, s)))
		}
	}
	w.line("; secret folders and the engine's own data")
	var reopen, above []string
	for _, h := range p.hidden {
		keys := []string{}
		for _, s := range spellings(h) {
			keys = append(keys, w.param(keyHide, s))
		}
		var inside []string
		for _, g := range p.carved() {
			if within(g, h) && g != h {
				inside = append(inside, g)
				for _, a := range ancestors(g) {
					if within(a, h) {
						reopen = appendNew(reopen, a)
					}
				}
			}
		}
		for _, k := range keys {
			f := subpath(k)
			if len(inside) > 0 {
				parts := []string{f}
				for _, g := range inside {
					parts = append(parts, "(require-not "+subpath(w.paramFor(g))+")")
				}
				f = "(require-all " + strings.Join(parts, " ") + ")"
			}
			w.rule("deny", "file-read* file-write*", f)
		}
		for _, a := range ancestors(h) {
			above = appendNew(above, a)
		}
	}
	// Move-blocking: renaming a folder above a secret would carry the
	// secret out from under its deny, so none of them may be unlinked
	// (renamed away) or created (renamed onto).
	if len(above) > 0 {
		var fs []string
		for _, a := range above {
			for _, s := range spellings(a) {
				fs = append(fs, literal(w.param(keyHideUp, s)))
			}
		}
		w.line("(deny file-write-unlink file-write-create\n  " + strings.Join(fs, "\n  ") + ")")
	}
	if len(reopen) > 0 {
		w.line("; the folders above a workspace or mount inside a denied folder: metadata only, so realpath works")
		for _, a := range reopen {
			w.rule("allow", "file-read-metadata", literal(w.param(keyHideDir, a)))
		}
	}
}

// spellings are the ways a path is written: its real one, and for
// /private/{tmp,var,etc} the short one too.
func spellings(p string) []string {
	if o := otherSpelling(p); o != "" {
		return []string{p, o}
	}
	return []string{p}
}

func mountKey(i int) string { return keyMount + "_" + strconv.Itoa(i) }

func subpath(key string) string { return `(subpath (param "` + key + `"))` }
func literal(key string) string { return `(literal (param "` + key + `"))` }

// appendNew appends v unless list has it.
func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// outermost drops paths that lie inside another of the list: the deny of
// the outer one covers them.
func outermost(list []string) []string {
	var out []string
	for _, p := range list {
		if !slices.ContainsFunc(list, func(q string) bool { return q != p && within(p, q) }) {
			out = append(out, p)
		}
	}
	return out
}

// writer accumulates the profile's text and parameters.
type writer struct {
	b      strings.Builder
	params []Param
	count  map[string]int
}

func (w *writer) line(s string) { w.b.WriteString(s + "\n") }
func (w *writer) text(s string) { w.b.WriteString(s) }

func (w *writer) rule(action, ops, filter string) {
	w.line("(" + action + " " + ops + " " + filter + ")")
}

// param defines a new parameter prefix_N for value and returns its key.
func (w *writer) param(prefix, value string) string {
	if w.count == nil {
		w.count = map[string]int{}
	}
	key := prefix + "_" + strconv.Itoa(w.count[prefix])
	w.count[prefix]++
	w.params = append(w.params, Param{Key: key, Value: value})
	return key
}

// paramOnce defines key for value the first time it is asked for.
func (w *writer) paramOnce(key, value string) string {
	for _, p := range w.params {
		if p.Key == key {
			return key
		}
	}
	w.params = append(w.params, Param{Key: key, Value: value})
	return key
}

// paramFor is the key of the workspace or TMPDIR parameter holding value.
func (w *writer) paramFor(value string) string {
	for _, p := range w.params {
		if p.Value == value && (p.Key == keyWorkspace || p.Key == keyTemp) {
			return p.Key
		}
	}
	return w.param(keyHideDir, value)
}
