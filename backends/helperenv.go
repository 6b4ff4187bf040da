package backends

// HelperEnv is the whole environment of every program a backend starts on
// the host on a sandbox's behalf (bwrap, strace, setpriv, the launchers in
// front of a command): fixed, never the run's. The run's environment
// reaches only the sandboxed process, by a route no host-side program
// reads (bwrap's --setenv from a descriptor, a launcher's descriptor):
// LD_PRELOAD, LD_LIBRARY_PATH, GCONV_PATH and their kind in it would
// otherwise load the sandbox's code into those programs, in the host's
// namespaces and as the engine's user.
func HelperEnv() []string {
	return []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
}
