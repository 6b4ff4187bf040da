package bwrap

import (
	"strings"
)

// diagnoseUserns explains a bwrap failure caused by blocked user namespaces,
// reading the relevant sysctls through read (nil error and the value, or an
// error when the file does not exist). It returns "" when stderr is about
// something else.
func diagnoseUserns(stderr string, read func(path string) (string, error)) string {
	// bwrap's words for "user namespaces are not allowed".
	usernsMessages := []string{
		"No permission to create new namespace",
		"setting up uid map: Permission denied",
		"Creating new namespace failed",
		"unprivileged user namespaces",
	}
	blocked := false
	for _, m := range usernsMessages {
		if strings.Contains(stderr, m) {
			blocked = true
			break
		}
	}
	if !blocked {
		return ""
	}
	val := func(p string) string {
		v, err := read(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(v)
	}
	switch {
	case val("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "user namespaces are blocked by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1, as on Ubuntu 24.04): " +
			"install an AppArmor profile that allows bwrap to use them (e.g. /etc/apparmor.d/bwrap-userns-restrict) " +
			"or run `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"
	case val("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0): " +
			"run `sysctl -w kernel.unprivileged_userns_clone=1`"
	case val("/proc/sys/user/max_user_namespaces") == "0":
		return "user namespaces are disabled (user.max_user_namespaces=0): run `sysctl -w user.max_user_namespaces=15000`"
	}
	return "bwrap may not create user namespaces here (" + firstLine(stderr) + "); " +
		"a container or security policy may forbid them: check kernel.unprivileged_userns_clone, " +
		"user.max_user_namespaces and AppArmor/SELinux rules for bwrap"
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
