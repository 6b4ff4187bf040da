package app

import "github.com/senclaw/sandbox/app/sandboxuid"

// accountFiles is unused off Unix, where no engine runs as root.
func accountFiles(sandboxuid.System) string { return "" }
