// What this build is: its version, the commit it was built from and when.

package main

import (
	"fmt"
	"runtime/debug"
)

// version, commit and buildDate are set at build time with -ldflags
// "-X main.version=... -X main.commit=... -X main.buildDate=..." (the
// Makefile does). A plain `go build` in a clone still knows its commit and
// its time from the VCS stamp Go embeds.
var (
	version   = "dev"
	commit    = ""
	buildDate = ""
)

// versionLine is what `senclaw --version` prints.
func versionLine() string {
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
