// Command gen-man writes senclaw's man pages from its command table.
//
//	go run ./scripts/gen-man DIR
//
// writes senclaw.1 and a page per command and verb (senclaw-run.1,
// senclaw-trace-on.1, ...) into DIR, as cobra/doc makes them, dated with
// the commit's date (SOURCE_DATE_EPOCH when set) so that one commit
// always makes the same pages. make install-files runs it; the man page
// generator is no part of senclaw itself, whose start it would slow.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/senclaw/sandbox/app/cli"
	"github.com/senclaw/sandbox/internal/version"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/gen-man DIR")
		os.Exit(2)
	}
	date := time.Now().UTC()
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		date = time.Unix(s, 0).UTC()
	}
	if err := write(cli.Commands(), os.Args[1], date); err != nil {
		fmt.Fprintln(os.Stderr, "gen-man:", err)
		os.Exit(1)
	}
}

// manual is what senclaw.1 says besides its commands, in cobra/doc's
// markdown.
const manual = `SenClaw Sandbox runs AI agents' shell commands and Python/Node code on this
machine inside an operating-system sandbox (bubblewrap, Landlock or Docker),
and shows and controls what runs. With no command, **senclaw** is the desktop
app: the engine, its API and dashboard, the window and the tray. Every other
command is a client of the engine's daemon and starts a headless one when none
answers. Agents drive it through MCP (**senclaw sandbox-server**) or the REST
API.

# EXIT STATUS

**senclaw run** exits with the command's own exit code, 124 when the run timed
out, and 126 when it was refused (the reason is on stderr). Other commands exit
0 on success, 1 when the engine failed and 2 on bad flags or input.

# ENVIRONMENT

**SENCLAW_DATA_DIR**
: the data dir, as **--data-dir**

**XDG_DATA_HOME**, **XDG_CONFIG_HOME**, **XDG_RUNTIME_DIR**
: where the data (*$XDG_DATA_HOME/senclaw*), the API token
(*$XDG_CONFIG_HOME/senclaw/api-token*) and the API socket
(*$XDG_RUNTIME_DIR/senclaw/api.sock*) live

**SENCLAW_LISTEN**
: the dashboard's address, as **senclaw serve --listen**

# FILES

*~/.local/share/senclaw/*
: the database and the sandboxes' workspaces (*/var/lib/senclaw* for an engine running as root)

*~/.config/autostart/senclaw.desktop*
: present when the app starts at login (the dashboard's Defaults card and the tray change it)
`

// write writes the pages of root into dir.
func write(root *cobra.Command, dir string, date time.Time) error {
	root.Long = manual
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Title: "SENCLAW", Section: "1", Date: &date, Source: "senclaw " + version.Version(), Manual: "User Commands"}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return doc.GenManTree(root, header, dir)
}
