package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// programDirs are the host directories, beyond the sandbox's PATH, where
// interpreters are installed: the system's, /opt's install prefixes, and,
// under the home directory (open mode shows it), the usual version
// managers'. Patterns are filepath.Glob patterns.
var programDirs = []string{
	"/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/bin", "/sbin",
	"/usr/libexec", "/usr/local/libexec", "/opt/*/bin", "/opt/*/*/bin",
	"/run/current-system/sw/bin", "/nix/var/nix/profiles/default/bin",
}

// libraryDirs are where the runtimes' shared libraries live.
var libraryDirs = []string{
	"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/usr/local/lib64",
	"/lib/*-linux-gnu*", "/usr/lib/*-linux-gnu*", "/opt/*/lib", "/opt/*/*/lib",
}

// homeRuntimeDirs are the version managers' program and library
// directories, relative to the home directory.
var homeRuntimeDirs = []string{
	".local/bin", ".pyenv/versions/*/bin", ".pyenv/versions/*/lib",
	".local/share/uv/python/*/bin", ".local/share/uv/python/*/lib",
	".nvm/versions/node/*/bin", ".volta/tools/image/node/*/bin",
	".local/share/fnm/node-versions/*/installation/bin",
	".asdf/installs/python/*/bin", ".asdf/installs/nodejs/*/bin",
	"miniconda3/bin", "miniconda3/lib", "anaconda3/bin", "anaconda3/lib",
	"miniconda3/envs/*/bin", "anaconda3/envs/*/bin", ".conda/envs/*/bin",
}

// maskedRuntimes are the runtimes whose switch is off.
func maskedRuntimes(pol ExecPolicy) []string {
	var out []string
	if !pol.RunPython {
		out = append(out, backends.RuntimePython)
	}
	if !pol.RunNode {
		out = append(out, backends.RuntimeNode)
	}
	return out
}

// maskInterpreters fills spec.Masked and spec.MaskedRuntimes from the
// policy: with Run Python or Run Node off, no interpreter of that runtime
// may start in any sandbox, whatever the command (sh -c 'python3 ...',
// env python3, /usr/bin/python3.11, a symlink to it). The text check in
// choose only gives the early, clear message; this is the barrier: the
// backends mask these files (the real files that the links lead to)
// so that they can be neither executed nor read (and so not copied).
func (e *Engine) maskInterpreters(spec *backends.Spec) {
	spec.MaskedRuntimes = maskedRuntimes(e.Policy())
	spec.Masked = nil
	if len(spec.MaskedRuntimes) > 0 {
		spec.Masked = e.runtimeScan.files(spec.MaskedRuntimes, e.runtimeDirs())
	}
}

// runtimeDirs lists the directories the scan looks in.
func (e *Engine) runtimeDirs() []string {
	dirs := append(filepath.SplitList(e.opts.SystemPath), programDirs...)
	dirs = append(dirs, libraryDirs...)
	if e.opts.HomeDir != "" {
		for _, d := range homeRuntimeDirs {
			dirs = append(dirs, filepath.Join(e.opts.HomeDir, d))
		}
	}
	return dirs
}

// runtimeScan finds the runtimes' files. It remembers, per directory,
// the names of the runtimes' files it saw there and the directory's
// modification time: a program installed or removed changes that time,
// and only then is the directory (/usr/bin, a multiarch lib dir: large)
// read again. The links are resolved at every scan.
type runtimeScan struct {
	mu   sync.Mutex
	dirs map[string]scannedDir
}

type scannedDir struct {
	mtime, read time.Time
	names       []string // entries that belong to a runtime
}

// settled reports whether c can stand for a directory whose modification
// time is mtime: it is the same, and was already a second old when c was
// read (the clock the kernel stamps with is coarse: a change in the same
// tick as the read would not move it).
func (c scannedDir) settled(mtime time.Time) bool {
	return c.mtime.Equal(mtime) && c.read.Sub(c.mtime) > time.Second
}

// files returns the real paths of the files in dirs (glob patterns, not
// walked below) that belong to one of runtimes: each interpreter or
// library, and the file each such name's symlinks lead to. Sorted,
// without duplicates.
func (r *runtimeScan) files(runtimes []string, dirs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, pattern := range dirs {
		matches, _ := filepath.Glob(pattern)
		for _, dir := range matches {
			if seen[dir] {
				continue
			}
			seen[dir] = true
			for _, name := range r.names(dir) {
				if !slices.Contains(runtimes, backends.RuntimeOfFile(name)) {
					continue
				}
				real, err := filepath.EvalSymlinks(filepath.Join(dir, name))
				if err != nil {
					continue
				}
				if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() {
					out = append(out, real)
				}
			}
		}
	}
	slices.SortFunc(out, strings.Compare)
	return slices.Compact(out)
}

// names lists dir's entries that belong to any runtime.
func (r *runtimeScan) names(dir string) []string {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil
	}
	r.mu.Lock()
	c, ok := r.dirs[dir]
	r.mu.Unlock()
	if ok && c.settled(fi.ModTime()) {
		return c.names
	}
	c = scannedDir{mtime: fi.ModTime(), read: time.Now()}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, de := range entries {
		if backends.RuntimeOfFile(de.Name()) != "" {
			c.names = append(c.names, de.Name())
		}
	}
	r.mu.Lock()
	if r.dirs == nil {
		r.dirs = map[string]scannedDir{}
	}
	r.dirs[dir] = c
	r.mu.Unlock()
	return c.names
}
