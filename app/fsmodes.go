package app

import "github.com/senclaw/sandbox/backends"

// FsModeLabels lists the fs modes with their labels and descriptions.
func FsModeLabels() []FsModeInfo {
	return []FsModeInfo{
		{Mode: backends.FsStrict, Label: "Strict", Description: "its own folder, its mounts and the system folders (/usr, /etc, ...) that interpreters need; none of your data"},
		{Mode: backends.FsAllowlist, Label: "Allowlist", Description: "strict plus the folders listed in the settings' allowlist"},
		{Mode: backends.FsOpen, Label: "Open", Description: "the whole disk read-only, except secret folders (.ssh, .aws, browser profiles, ...) and senclaw's own data"},
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
