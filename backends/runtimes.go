package backends

import "strings"

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
