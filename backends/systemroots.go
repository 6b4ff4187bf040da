package backends

// SystemRoots returns the directories that strict and allowlist sandboxes
// on Linux (bwrap, Landlock) see read-only, so that programs and their
// libraries work. /opt is not one: it holds other applications' files;
// the install prefixes of the interpreters on the sandbox's PATH that
// live there are (bwrap's Host.Prefixes).
func SystemRoots() []string {
	return []string{
		"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
		"/etc", "/run/current-system", "/nix/store",
	}
}
