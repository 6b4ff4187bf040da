package app

import (
	"path/filepath"

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
		spec.Masked = e.runtimeScan.Files(spec.MaskedRuntimes, e.runtimeDirs())
	}
}

// runtimeDirs lists the directories the scan looks in (glob patterns).
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
