package agentshell

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Target is one settings file an integration is installed in.
type Target struct {
	Agent string `json:"agent"`
	// Scope is "user" (every project of this user) or "project".
	Scope string `json:"scope"`
	Path  string `json:"path"`
	// Project is the project of a project-scope target.
	Project string `json:"project,omitempty"`
}

// ClaudeTarget is Claude Code's settings file for the user (project "")
// or for a project. A project's hook goes to its settings.local.json,
// the file Claude Code keeps out of version control: the hook names this
// machine's senclaw binary.
func ClaudeTarget(home, project string) Target {
	if project == "" {
		return Target{Agent: ClaudeCode, Scope: "user", Path: filepath.Join(home, ".claude", "settings.json")}
	}
	return Target{Agent: ClaudeCode, Scope: "project", Project: project, Path: filepath.Join(project, ".claude", "settings.local.json")}
}

// GeminiTarget is Gemini CLI's settings file for the user or a project.
func GeminiTarget(home, project string) Target {
	if project == "" {
		return Target{Agent: GeminiCLI, Scope: "user", Path: filepath.Join(home, ".gemini", "settings.json")}
	}
	return Target{Agent: GeminiCLI, Scope: "project", Project: project, Path: filepath.Join(project, ".gemini", "settings.json")}
}

// HookCommand is the hook command an integration installs for agent.
func HookCommand(senclaw, agent string) string { return Quote(senclaw) + " hook " + agent }

// isOurs reports whether a hook command is one of senclaw's for agent,
// whatever the path (and name) of the binary it calls.
func isOurs(command, agent string) bool {
	return strings.HasSuffix(command, "' hook "+agent)
}

// hookEntry is one entry of an event's hooks list, its keys in the order
// the agents' own docs write them.
type hookEntry struct {
	Matcher string        `json:"matcher"`
	Hooks   []hookCommand `json:"hooks"`
}

type hookCommand struct {
	Name        string `json:"name,omitempty"`
	Type        string `json:"type"`
	Command     string `json:"command"`
	Timeout     int    `json:"timeout"`
	Description string `json:"description,omitempty"`
}

// Change is what installing or removing an integration does to a file.
type Change struct {
	Target Target
	Before []byte // nil when the file does not exist
	After  []byte
	// Notes say what else the change means (a switch it turns on, ...).
	Notes []string
	// Private: the file holds a secret (an API token), so Apply writes
	// it for its owner alone (0600; an existing file loses its group and
	// other bits), in a folder it makes 0700.
	Private bool
	// Delete: the file goes (a removal of the file an install made,
	// Undo), and with DeleteDir its folder too when it is empty.
	Delete, DeleteDir bool
}

// Changed reports whether the file's content changes.
func (c Change) Changed() bool { return c.Delete || !bytes.Equal(c.Before, c.After) }

// MaxSettings bounds the size of a settings file this package reads.
const MaxSettings = 4 << 20

// Plan computes what installing (remove false) or removing senclaw's hook
// does to t's file, without writing. The file's other content is kept as
// it is, in its order; the file is written back with its own indentation.
func Plan(t Target, senclaw string, remove bool) (Change, error) {
	before, err := readTarget(t)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Change{}, err
	}
	c := Change{Target: t, Before: before}
	src := before
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{}")
	}
	root, err := parseObject(src)
	if err != nil {
		return Change{}, fmt.Errorf("%s is not a JSON object (%v); fix it, or move it away, and try again", t.Path, err)
	}
	// Claude Code's timeout is in seconds, Gemini CLI's in milliseconds.
	event := "PreToolUse"
	entry := hookEntry{Matcher: "Bash", Hooks: []hookCommand{{Type: "command", Command: HookCommand(senclaw, t.Agent), Timeout: 30}}}
	if t.Agent == GeminiCLI {
		event = "BeforeTool"
		entry = hookEntry{Matcher: "run_shell_command", Hooks: []hookCommand{{Name: "senclaw-agent-shell", Type: "command",
			Command: HookCommand(senclaw, t.Agent), Timeout: 30000,
			Description: "runs shell commands through senclaw's agent shell (senclaw integrate gemini-cli --remove undoes it)"}}}
	}
	hooks, err := childObject(root, "hooks", t.Path)
	if err != nil {
		return Change{}, err
	}
	var list []json.RawMessage
	if raw, ok := hooks.get(event); ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return Change{}, fmt.Errorf("%s: hooks.%s is not a list (%v); fix it and try again", t.Path, event, err)
		}
	}
	var kept []json.RawMessage
	present := false
	want := encode(entry)
	for _, e := range list {
		if entryIsOurs(e, t.Agent) {
			if !remove && bytes.Equal(compact(e), want) && !present {
				present = true
				kept = append(kept, e)
			}
			continue // ours: dropped (or replaced below)
		}
		kept = append(kept, e)
	}
	if !remove && !present {
		kept = append(kept, want)
	}
	if len(kept) == 0 {
		hooks.del(event)
	} else {
		hooks.set(event, encode(kept))
	}
	if len(hooks.keys) == 0 {
		root.del("hooks")
	} else {
		root.set("hooks", hooks.marshal())
	}
	if t.Agent == GeminiCLI && !remove {
		// Gemini CLI's switch for hooks: tools.enableHooks (off unless
		// set) in its early releases, hooksConfig.enabled (on unless
		// set false) since; either one off and the hook never runs.
		tools, err := childObject(root, "tools", t.Path)
		if err != nil {
			return Change{}, err
		}
		if raw, ok := tools.get("enableHooks"); !ok || string(compact(raw)) != "true" {
			tools.set("enableHooks", []byte("true"))
			root.set("tools", tools.marshal())
			c.Notes = append(c.Notes, "turns on tools.enableHooks, older Gemini CLI releases' switch for hooks (--remove leaves it on)")
		}
		hooksConfig, err := childObject(root, "hooksConfig", t.Path)
		if err != nil {
			return Change{}, err
		}
		if raw, ok := hooksConfig.get("enabled"); ok && string(compact(raw)) != "true" {
			hooksConfig.set("enabled", []byte("true"))
			root.set("hooksConfig", hooksConfig.marshal())
			c.Notes = append(c.Notes, "turns on hooksConfig.enabled, Gemini CLI's switch for hooks, which was off: it turns all your Gemini CLI hooks back on (--remove leaves it on)")
		}
	}
	if before == nil && len(root.keys) == 0 {
		c.After = nil // nothing to remove from a file that is not there
		return c, nil
	}
	c.After = format(root.marshal(), before)
	if before != nil && bytes.Equal(bytes.TrimSpace(compact(before)), bytes.TrimSpace(compact(c.After))) {
		c.After = before // the same JSON: leave the bytes alone
	}
	return c, nil
}

// Apply writes c.After over the file, atomically (a temporary file in the
// same folder, then a rename), keeping the file's mode. The user's
// settings file, when it is a symlink (to their dotfiles), is written
// where it leads; a project's is written only inside the project
// (writeInProject).
func Apply(c Change) error {
	if !c.Changed() {
		return nil
	}
	if c.Delete {
		return remove(c)
	}
	if c.Target.Project != "" {
		return writeInProject(c.Target.Project, c.Target.Path, c.After)
	}
	path := c.Target.Path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mode, dirMode := fs.FileMode(0o644), fs.FileMode(0o755)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if c.Private {
		mode, dirMode = mode&^0o077, 0o700
	}
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".senclaw-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(c.After); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// PlanKeys computes what setting (or, with remove, deleting) the keys of
// set under the top-level object parent ("mcpServers") does to t's file,
// without writing: the file's other content is kept as it is, in its
// order, and written back with its own indentation, as Plan does.
func PlanKeys(t Target, parent string, set map[string]json.RawMessage, remove bool) (Change, error) {
	before, err := readBounded(t.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Change{}, err
	}
	c := Change{Target: t, Before: before}
	src := before
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{}")
	}
	root, err := parseObject(src)
	if err != nil {
		return Change{}, fmt.Errorf("%s is not a JSON object (%v); fix it, or move it away, and try again", t.Path, err)
	}
	child, err := childObject(root, parent, t.Path)
	if err != nil {
		return Change{}, err
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if remove {
			child.del(k)
		} else if old, ok := child.get(k); !ok || !bytes.Equal(compact(old), compact(set[k])) {
			child.set(k, set[k])
		}
	}
	if len(child.keys) == 0 {
		root.del(parent)
	} else {
		root.set(parent, child.marshal())
	}
	if before == nil && len(root.keys) == 0 {
		return c, nil // nothing to remove from a file that is not there
	}
	c.After = format(root.marshal(), before)
	if before != nil && bytes.Equal(bytes.TrimSpace(compact(before)), bytes.TrimSpace(compact(c.After))) {
		c.After = before
	}
	return c, nil
}

// Installed reports whether senclaw's hook is in t's file, and the
// command it runs.
func Installed(t Target) (bool, string, error) {
	data, err := readBounded(t.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return installedIn(data, t.Agent)
}

func installedIn(data []byte, agent string) (bool, string, error) {
	var doc struct {
		Hooks map[string][]json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return false, "", fmt.Errorf("not valid JSON: %v", err)
	}
	for _, list := range doc.Hooks {
		for _, e := range list {
			if cmd := ourCommand(e, agent); cmd != "" {
				return true, cmd, nil
			}
		}
	}
	return false, "", nil
}

func entryIsOurs(e json.RawMessage, agent string) bool { return ourCommand(e, agent) != "" }

// ourCommand is the command of senclaw's hook in a hooks list entry, "".
func ourCommand(e json.RawMessage, agent string) string {
	var entry struct {
		Hooks []struct {
			Command string `json:"command"`
		} `json:"hooks"`
	}
	if json.Unmarshal(e, &entry) != nil {
		return ""
	}
	for _, h := range entry.Hooks {
		if isOurs(h.Command, agent) {
			return h.Command
		}
	}
	return ""
}

// readTarget reads t's file: a project's through the project only.
func readTarget(t Target) ([]byte, error) {
	if t.Project != "" {
		return readInProject(t.Project, t.Path)
	}
	return readBounded(t.Path)
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSettings+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSettings {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxSettings)
	}
	return data, nil
}

// childObject is root's object under key (empty if absent).
func childObject(root *object, key, path string) (*object, error) {
	raw, ok := root.get(key)
	if !ok {
		return &object{vals: map[string]json.RawMessage{}}, nil
	}
	o, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %s is not a JSON object (%v); fix it and try again", path, key, err)
	}
	return o, nil
}

// object is a JSON object that keeps its keys' order and its values'
// bytes.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func parseObject(raw []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	o := &object{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return o, nil
}

func (o *object) get(k string) (json.RawMessage, bool) { v, ok := o.vals[k]; return v, ok }

func (o *object) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *object) marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encode(k))
		b.WriteByte(':')
		b.Write(compact(o.vals[k]))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// encode is v as compact JSON, without HTML escapes.
func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSpace(b.Bytes())
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// format indents doc as the original file was indented (two spaces when
// it cannot tell), ending with a newline when it did or was new.
func format(doc, original []byte) []byte {
	indent := "  "
	for _, line := range strings.Split(string(original), "\n")[1:] {
		if trimmed := strings.TrimLeft(line, " \t"); trimmed != "" && len(trimmed) < len(line) {
			indent = line[:len(line)-len(trimmed)]
			break
		}
	}
	var b bytes.Buffer
	if json.Indent(&b, doc, "", indent) != nil {
		return doc
	}
	if original == nil || bytes.HasSuffix(original, []byte("\n")) {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// remove removes the file of c (Delete), and its folder when DeleteDir
// and it is empty; a project's inside the project only (removeInProject).
func remove(c Change) error {
	if c.Target.Project != "" {
		return removeInProject(c.Target.Project, c.Target.Path, c.DeleteDir)
	}
	fi, err := os.Lstat(c.Target.Path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is no longer a regular file; leaving it", c.Target.Path)
	}
	if err := os.Remove(c.Target.Path); err != nil {
		return err
	}
	if c.DeleteDir {
		_ = os.Remove(filepath.Dir(c.Target.Path)) // only when empty
	}
	return nil
}
