package backends

import "testing"

func TestRuntimeOfFile(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"python": RuntimePython, "python3": RuntimePython, "python3.11": RuntimePython, "python3.13t": RuntimePython,
		"python3.12d": RuntimePython, "python2.7": RuntimePython, "pypy3": RuntimePython, "pypy3.10": RuntimePython,
		"libpython3.11.so.1.0": RuntimePython, "libpython3.so": RuntimePython, "libpypy3.9-c.so": RuntimePython,
		"node": RuntimeNode, "nodejs": RuntimeNode, "libnode.so.108": RuntimeNode, "libnode.so": RuntimeNode,
		"python3-config": "", "python3.11-config": "", "pythonrc.py": "", "libpython3.11.a": "", "nodemon": "",
		"node-gyp": "", "npm": "", "sh": "", "pydoc3": "", "libnodeps.so": "",
	} {
		if got := RuntimeOfFile(name); got != want {
			t.Errorf("RuntimeOfFile(%q) = %q, want %q", name, got, want)
		}
	}
}
