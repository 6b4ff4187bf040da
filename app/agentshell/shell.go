package agentshell

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WrapperName is the SHELL wrapper's file name.
const WrapperName = "senclaw-agent-shell"

// WrapperPath is where the wrapper goes: bin/ in senclaw's data dir.
func WrapperPath(dataDir string) string { return filepath.Join(dataDir, "bin", WrapperName) }

// Wrapper is the wrapper script for the senclaw binary at senclaw: a
// program that runs $SHELL -c LINE (or -lc, -ic, ...), $SHELL SCRIPT or
// a bare $SHELL gets the agent shell instead of a shell on the host.
// Shell options it does not know are ignored, as login and interactive
// setups have no meaning in the agent shell.
func Wrapper(senclaw string) []byte {
	s := Quote(senclaw)
	return []byte(`#!/bin/sh
# senclaw-agent-shell: written by "senclaw integrate shell", removed by
# "senclaw integrate shell --remove". Set SHELL to this file and what a
# program runs with $SHELL goes through senclaw's agent shell: sandboxed
# in the project (the current directory) when the Agent shell switch is
# on, directly on this machine (recorded as none) when it is off.
while [ $# -gt 0 ]; do
	case "$1" in
	-c | -[!-]*c*) shift; exec ` + s + ` agent-shell --agent shell -c "$@" ;;
	--) shift; break ;;
	-*) shift ;;
	*) break ;;
	esac
done
if [ $# -eq 0 ]; then
	exec ` + s + ` agent-shell --agent shell
fi
exec ` + s + ` agent-shell --agent shell -- /bin/sh "$@"
`)
}

// PlanWrapper is what installing (or removing) the wrapper does.
func PlanWrapper(dataDir, senclaw string, remove bool) (Change, error) {
	t := Target{Agent: Shell, Scope: "user", Path: WrapperPath(dataDir)}
	before, err := readBounded(t.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Change{}, err
	}
	c := Change{Target: t, Before: before}
	if !remove {
		c.After = Wrapper(senclaw)
	}
	if before != nil && !bytes.Contains(before, []byte("senclaw integrate shell")) {
		return Change{}, errors.New(t.Path + " exists and was not written by senclaw; move it away first")
	}
	return c, nil
}

// ApplyWrapper writes (mode 0755) or removes the wrapper.
func ApplyWrapper(c Change) error {
	if !c.Changed() {
		return nil
	}
	if c.After == nil {
		return os.Remove(c.Target.Path)
	}
	if err := os.MkdirAll(filepath.Dir(c.Target.Path), 0o755); err != nil {
		return err
	}
	tmp := c.Target.Path + ".new"
	if err := os.WriteFile(tmp, c.After, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, c.Target.Path)
}

// Integration is where one agent's integration is, and whether it is
// installed there.
type Integration struct {
	Target
	Installed bool `json:"installed"`
	// Command is the hook's command (the wrapper's senclaw) as installed.
	Command string `json:"command,omitempty"`
	// Problem says why the state could not be read, "" when it was.
	Problem string `json:"problem,omitempty"`
}

// Status reads where the integrations are installed: the user's settings
// of each agent, the settings of each project given (the agent
// sandboxes' projects), and the wrapper in the data dir. It only reads,
// bounded, and a project's files only through the project itself,
// following no link in it (readInProject: a sandboxed command may write
// the project).
func Status(home, dataDir string, projects []string) []Integration {
	var out []Integration
	add := func(t Target, read func() ([]byte, error)) {
		in := Integration{Target: t}
		data, err := read()
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			in.Problem = err.Error()
		case t.Agent == Shell:
			in.Installed = bytes.Contains(data, []byte("senclaw integrate shell"))
			if _, rest, ok := strings.Cut(string(data), "exec "); ok {
				in.Command, _, _ = strings.Cut(rest, " agent-shell")
			}
		default:
			ok, cmd, err := installedIn(data, t.Agent)
			in.Installed, in.Command = ok, cmd
			if err != nil {
				in.Problem = t.Path + ": " + err.Error()
			}
		}
		if in.Installed || in.Problem != "" || t.Scope == "user" {
			out = append(out, in)
		}
	}
	if home != "" {
		for _, t := range []Target{ClaudeTarget(home, ""), GeminiTarget(home, "")} {
			add(t, func() ([]byte, error) { return readBounded(t.Path) })
		}
	}
	for _, p := range projects {
		for _, t := range []Target{ClaudeTarget(p, p), {Agent: ClaudeCode, Scope: "project", Project: p, Path: filepath.Join(p, ".claude", "settings.json")}, GeminiTarget(p, p)} {
			add(t, func() ([]byte, error) { return readInProject(p, t.Path) })
		}
	}
	wrapper := WrapperPath(dataDir)
	add(Target{Agent: Shell, Scope: "user", Path: wrapper}, func() ([]byte, error) { return readBounded(wrapper) })
	return out
}
