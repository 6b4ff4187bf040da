package backends

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Runtimes that a switch of the exec policy can turn off.
const (
	RuntimePython = "python"
	RuntimeNode   = "node"
)

// RuntimeSwitch is the name people know the runtime's switch by.
func RuntimeSwitch(runtime string) string {
	switch runtime {
	case RuntimePython:
		return "Run Python"
	case RuntimeNode:
		return "Run Node"
	}
	return runtime
}

// RuntimeSwitches names the switches of runtimes, joined with "and".
func RuntimeSwitches(runtimes []string) string {
	names := make([]string, len(runtimes))
	for i, r := range runtimes {
		names[i] = RuntimeSwitch(r)
	}
	return strings.Join(names, " and ")
}

// RuntimeOfFile says which runtime a file named name belongs to: an
// interpreter (python3, python3.12, python3.13t, pypy3, node, nodejs) or
// its shared runtime library (libpython3.12.so.1.0, libpypy3.9-c.so,
// libnode.so.108); "" for anything else (python3-config, pythonrc.py).
// Backends mask such files when the runtime's switch is off.
func RuntimeOfFile(name string) string {
	switch {
	case name == "node" || name == "nodejs" || strings.HasPrefix(name, "libnode.so"):
		return RuntimeNode
	case (strings.HasPrefix(name, "libpython") || strings.HasPrefix(name, "libpypy")) && strings.Contains(name, ".so"):
		return RuntimePython
	}
	for _, prefix := range []string{"python", "pypy"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok && versionTag(rest) {
			return RuntimePython
		}
	}
	return ""
}

// versionTag reports whether s is what follows "python" in an
// interpreter's name: digits and dots, then at most an ABI flag or two
// (d: debug, m: pymalloc, t: free-threaded, u: wide unicode).
func versionTag(s string) bool {
	s = strings.TrimRight(s, "dmtu")
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// RuntimeScan finds the runtimes' files on the host; its zero value is
// ready, and it is safe for concurrent use. It remembers, per directory,
// the names of the runtimes' files it saw there and the directory's
// modification time: a program installed or removed changes that time,
// and only then is the directory (/usr/bin, a multiarch lib dir: large)
// read again. The links are resolved at every scan.
type RuntimeScan struct {
	mu   sync.Mutex
	dirs map[string]scannedDir
	// recent are FilesWithin's answers, by runtimes and dirs.
	recent map[string]recentFiles
}

type recentFiles struct {
	at    time.Time
	files []string
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

// Files returns the real paths of the files in dirs (glob patterns, not
// walked below) that belong to one of runtimes: each interpreter or
// library, and the file each such name's symlinks lead to. Sorted,
// without duplicates.
func (r *RuntimeScan) Files(runtimes []string, dirs []string) []string {
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
				if !slices.Contains(runtimes, RuntimeOfFile(name)) {
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

// FilesWithin is Files, answered from the last scan of the same
// runtimes and dirs when it is at most maxAge old: for what only makes
// a sandbox work (the install prefixes its interpreters need), never for
// what keeps something out of it (the masks of a switched-off runtime
// use Files). A burst of runs then resolves the PATH's links once, not
// once a run.
func (r *RuntimeScan) FilesWithin(runtimes []string, dirs []string, maxAge time.Duration) []string {
	key := strings.Join(runtimes, "\x00") + "\x01" + strings.Join(dirs, "\x00")
	now := time.Now()
	r.mu.Lock()
	c, ok := r.recent[key]
	r.mu.Unlock()
	if ok && now.Sub(c.at) >= 0 && now.Sub(c.at) <= maxAge {
		return c.files
	}
	files := r.Files(runtimes, dirs)
	r.mu.Lock()
	if r.recent == nil || len(r.recent) >= 64 {
		r.recent = map[string]recentFiles{} // one PATH or a few: never many
	}
	r.recent[key] = recentFiles{at: now, files: files}
	r.mu.Unlock()
	return files
}

// names lists dir's entries that belong to any runtime.
func (r *RuntimeScan) names(dir string) []string {
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
		if RuntimeOfFile(de.Name()) != "" {
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
