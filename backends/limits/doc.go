// Package limits enforces the resource limits of sandboxed runs for bwrap
// and landlock on Linux.
//
// Those backends start host processes themselves. It uses cgroups (v1 or v2,
// as root, in a delegated subtree, or in a scope systemd's user manager
// delegates to an ordinary user's engine on request) for memory, pids and
// CPU, and rlimits where no cgroup can be made (RLIMIT_DATA for memory),
// plus the rlimits every run gets (file size for the disk quota, no core
// dumps).
//
// Host finds, once, which of these holds (Detect finds where cgroups can
// be made, delegate asks systemd); NewPlan makes one run's cgroups
// and decides its rlimits; Plan.Apply puts the run's first process under
// them before it runs anything of the sandbox. The Cgroups of a run list,
// signal and kill every process of it, however it forked.
package limits

import (
	"crypto/rand"
	"encoding/hex"
)

// RandomID returns 16 random hex digits, for cgroup and run names.
func RandomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ValidName reports whether id is safe as a cgroup directory name:
// letters, digits, '.', '_' and '-', not starting with '.', at most 128.
func ValidName(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '.' || r == '_' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}
