package app

import "github.com/senclaw/sandbox/backends"

// FsModeInfo describes a fs mode for people.
type FsModeInfo struct {
	Mode        backends.FsMode `json:"mode"`
	Label       string          `json:"label"`
	Description string          `json:"description"`
}

// FsModeLabels lists the fs modes with their labels and descriptions.
func FsModeLabels() []FsModeInfo {
	return []FsModeInfo{
		{backends.FsStrict, "Strict", "its own folder, its mounts and the system folders (/usr, /etc, ...) that interpreters need; none of your data"},
		{backends.FsAllowlist, "Allowlist", "strict plus the folders listed in the settings' allowlist"},
		{backends.FsOpen, "Open", "the whole disk read-only, except secret folders (.ssh, .aws, browser profiles, ...) and senclaw's own data"},
	}
}

// FsModeLabel is the label of mode.
func FsModeLabel(mode backends.FsMode) string {
	for _, m := range FsModeLabels() {
		if m.Mode == mode {
			return m.Label
		}
	}
	return string(mode)
}
