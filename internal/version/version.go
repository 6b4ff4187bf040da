// Package version says what this build is: its version, commit and date.
package version

import (
	"fmt"
	"runtime/debug"
)

// version, commit and buildDate are set at build time with -ldflags "-X
// github.com/senclaw/sandbox/internal/version.version=..." (and .commit,
// .buildDate; the Makefile does, for every executable). A plain `go
// build` in a clone still knows its commit and its time from the VCS
// stamp Go embeds.
var (
	version   = "dev"
	commit    = ""
	buildDate = ""
)

// Version is the release this build is of ("dev" for a clone's).
func Version() string { return version }

// Line is what `senclaw --version` prints.
func Line() string {
	c, d := commit, buildDate
	if info, ok := debug.ReadBuildInfo(); ok {
		dirty := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" && len(s.Value) >= 12 {
					c = s.Value[:12]
				}
			case "vcs.time":
				if d == "" && len(s.Value) >= 10 {
					d = s.Value[:10]
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && commit == "" && c != "" {
			c += "-dirty"
		}
	}
	line := "senclaw " + version
	switch {
	case c != "" && d != "":
		line += fmt.Sprintf(" (commit %s, built %s)", c, d)
	case c != "":
		line += fmt.Sprintf(" (commit %s)", c)
	}
	return line
}

// BuildDate is the day this build's commit was made (the Makefile sets
// it), "" when not known.
func BuildDate() string { return buildDate }
