// Package autostart manages the desktop app's Start at login, an XDG
// autostart entry.
//
// The entry is ~/.config/autostart/senclaw.desktop, switched by "Start at
// login" in the dashboard's Defaults card, the tray and `senclaw autostart`.
// The entry on disk is the state: nothing else remembers the choice, so what
// is shown is what the session manager will do at the next login.
package autostart

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FileName is the entry's name in the autostart directory.
const FileName = "senclaw.desktop"

// Entry is the autostart entry of one user.
type Entry struct {
	// Dir is the user's autostart directory ($XDG_CONFIG_HOME/autostart).
	Dir string
	// Exec is the program the entry starts: the senclaw executable.
	Exec string
}

// State is what the entry on disk says.
type State struct {
	Enabled bool   `json:"enabled"`
	Path    string `json:"path"`
	// Exec is the program the entry starts, when it is enabled.
	Exec string `json:"exec,omitempty"`
	// Foreign is true when a file of that name exists but was not written
	// by senclaw: it is left alone, and shown as it is.
	Foreign bool `json:"foreign,omitempty"`
}

// marker identifies entries senclaw wrote.
const marker = "X-SenClaw-Autostart=true"

// Path is where the entry lives.
func (e Entry) Path() string { return filepath.Join(e.Dir, FileName) }

// State reads the entry as it is on disk. An entry that exists and is not
// disabled by Hidden=true (the XDG way to turn an autostart entry off)
// counts as enabled, whoever wrote it.
func (e Entry) State() (State, error) {
	st := State{Path: e.Path()}
	data, err := os.ReadFile(st.Path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading %s: %w", st.Path, err)
	}
	st.Foreign = !bytes.Contains(data, []byte(marker))
	st.Enabled = true
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		switch {
		case !ok:
		case k == "Hidden" && strings.EqualFold(v, "true"):
			st.Enabled = false
		case k == "Exec":
			st.Exec = v
		}
	}
	return st, nil
}

// Set writes (enabled) or removes the entry and returns the new state. An
// entry senclaw did not write is never overwritten or removed: the
// error says where it is.
func (e Entry) Set(enabled bool) (State, error) {
	st, err := e.State()
	if err != nil {
		return st, err
	}
	if st.Foreign {
		return st, fmt.Errorf("%s exists and was not written by senclaw; edit or remove it yourself", st.Path)
	}
	if !enabled {
		if err := os.Remove(st.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return st, fmt.Errorf("removing %s: %w", st.Path, err)
		}
		return e.State()
	}
	if !filepath.IsAbs(e.Exec) {
		return st, fmt.Errorf("the autostart entry needs the absolute path of senclaw, got %q", e.Exec)
	}
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return st, fmt.Errorf("creating %s: %w", e.Dir, err)
	}
	tmp := st.Path + ".tmp"
	if err := os.WriteFile(tmp, Desktop(e.Exec), 0o644); err != nil {
		return st, fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, st.Path); err != nil {
		os.Remove(tmp)
		return st, fmt.Errorf("writing %s: %w", st.Path, err)
	}
	return e.State()
}

// Desktop is the entry's text for the program exec.
func Desktop(exec string) []byte {
	return []byte(`[Desktop Entry]
Type=Application
Name=SenClaw Sandbox
Comment=Run AI agents' commands and code in an operating-system sandbox, and see what runs
Exec=` + quoteExec(exec) + `
Icon=senclaw
Terminal=false
X-GNOME-Autostart-enabled=true
` + marker + "\n")
}

// quoteExec quotes a path for a desktop entry's Exec key (the Desktop
// Entry Specification's rules: double quotes, and inside them a
// backslash before ", `, $ and \; a literal % is %%).
func quoteExec(p string) string {
	if !strings.ContainsAny(p, " \t\n\"'\\><~|&;$*?#()`%") {
		return p
	}
	r := strings.NewReplacer(`\`, `\\\\`, `"`, `\\"`, "`", "\\\\`", `$`, `\\$`, "%", "%%")
	return `"` + r.Replace(p) + `"`
}
