// Package policyfile reads the layered policy files and merges them.
//
// The owner's file (~/.config/senclaw/policy.json) holds the settings
// and the exec policy as a file the engine reads and writes; a project's
// file (<project>/.senclaw/policy.json) may only narrow it. Merge says,
// for every value, which layer decided it, and names each key of the
// project's that it ignored because it would have widened the owner's.
// Parse refuses a broken file with its line and column: there is no
// fallback to defaults.
package policyfile

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/backends"
)

// File is one policy file, the owner's or a project's. An absent key
// says nothing: the layer below decides it.
type File struct {
	// Schema is the URL of the file's JSON schema, for editors.
	Schema string `json:"$schema,omitempty"`
	// FsMode is what a run may read: strict, allowlist or open.
	FsMode string `json:"fsMode,omitempty"`
	// Allowlist are the folders an allowlist-mode run may read.
	Allowlist []string `json:"allowlist,omitempty"`
	// Network lets a run use the network (through the engine's proxy).
	Network *bool `json:"network,omitempty"`
	// AllowedDomains, when not empty, are the only names a run may reach.
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	// HTTPRules limit the methods and paths allowed on their hosts.
	HTTPRules []backends.HTTPRule `json:"httpRules,omitempty"`
	// Ports are the listen, connect and loopback ports.
	Ports *Ports `json:"ports,omitempty"`
	// Limits are a run's resource limits.
	Limits *Limits `json:"limits,omitempty"`
	// Env are the names of the environment variables a run may be given;
	// absent: any.
	Env []string `json:"env,omitempty"`
	// Secrets are the engine's secrets a run may use, by name; absent: any.
	Secrets []string `json:"secrets,omitempty"`
	// MountAllow, AllowDirect and AllowedSockets are the owner's alone:
	// in a project's file they are ignored.
	MountAllow     []string `json:"mountAllow,omitempty"`
	AllowDirect    *bool    `json:"allowDirect,omitempty"`
	AllowedSockets []string `json:"allowedSockets,omitempty"`
	// AgentShell is the exec policy's agent shell part (the owner's
	// file only): sandboxed or on the host, and what its sandbox gets.
	AgentShell *AgentShell `json:"agentShell,omitempty"`
}

// Ports are a run's port rules; an empty list is none.
type Ports struct {
	Listen   []int `json:"listen,omitempty"`
	Connect  []int `json:"connect,omitempty"`
	Loopback []int `json:"loopback,omitempty"`
}

// Limits are a run's resource limits; in the owner's file, also the most
// a project's may ask for.
type Limits struct {
	CPUs      *float64 `json:"cpus,omitempty"`
	MemoryMB  *int     `json:"memoryMb,omitempty"`
	Pids      *int     `json:"pids,omitempty"`
	TimeoutMs *int     `json:"timeoutMs,omitempty"`
	DiskMB    *int     `json:"diskMb,omitempty"`
}

// AgentShell is the exec policy of the agent shell.
type AgentShell struct {
	// Sandboxed runs the agent shell in the project's sandbox (the Agent
	// shell switch); false runs it on the host.
	Sandboxed *bool  `json:"sandboxed,omitempty"`
	FsMode    string `json:"fsMode,omitempty"`
	Network   *bool  `json:"network,omitempty"`
	Loopback  []int  `json:"loopback,omitempty"`
}

// Error is a broken policy file: where, and what is wrong.
type Error struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s; fix the file (senclaw policy schema prints what it may hold): a broken policy file refuses the run rather than fall back to defaults", e.File, e.Line, e.Column, e.Msg)
}

// MaxSize bounds a policy file.
const MaxSize = 256 << 10

var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// Parse reads a policy file; name is its path, for errors. Unknown keys,
// values of the wrong type and values out of range are refused with the
// line and column where they are.
func Parse(name string, data []byte) (File, error) {
	var f File
	if len(data) > MaxSize {
		return f, &Error{File: name, Line: 1, Column: 1, Msg: fmt.Sprintf("the file is larger than %d bytes", MaxSize)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return File{}, decodeError(name, data, err)
	}
	if dec.More() {
		line, col := position(data, int(dec.InputOffset()))
		return File{}, &Error{File: name, Line: line, Column: col, Msg: "more follows the policy's object; a policy file is one JSON object"}
	}
	if err := f.check(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			line, col := keyPosition(data, fe.key)
			return File{}, &Error{File: name, Line: line, Column: col, Msg: fe.Error()}
		}
		return File{}, err
	}
	return f, nil
}

// ErrorAt is a broken file's error for a value its caller found wrong
// after Parse: key is its path (httpRules[2].host), msg what is wrong.
func ErrorAt(name string, data []byte, key, msg string) *Error {
	line, col := keyPosition(data, key)
	return &Error{File: name, Line: line, Column: col, Msg: key + " " + msg}
}

// Marshal is the file as the engine writes it: indented, a newline last.
func Marshal(f File) []byte {
	data, _ := json.MarshalIndent(f, "", "  ")
	return append(data, '\n')
}

func decodeError(name string, data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// The offset is past the byte that broke it.
		line, col := position(data, int(syn.Offset)-1)
		return &Error{File: name, Line: line, Column: col, Msg: "not valid JSON: " + strings.TrimPrefix(syn.Error(), "json: ")}
	case errors.As(err, &typ):
		line, col := position(data, int(typ.Offset))
		if typ.Field != "" {
			line, col = keyPosition(data, typ.Field)
		}
		return &Error{File: name, Line: line, Column: col, Msg: fmt.Sprintf("%s must be %s, not %s", typ.Field, typeWord(typ.Type.String()), typ.Value)}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		line, col := position(data, len(data))
		return &Error{File: name, Line: line, Column: col, Msg: "the file ends before its JSON object does"}
	}
	if key, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		key = strings.Trim(key, `"`)
		line, col := keyPosition(data, key)
		return &Error{File: name, Line: line, Column: col, Msg: fmt.Sprintf("unknown key %q", key)}
	}
	return &Error{File: name, Line: 1, Column: 1, Msg: err.Error()}
}

func typeWord(goType string) string {
	switch {
	case strings.Contains(goType, "[]"):
		return "a list"
	case strings.Contains(goType, "int"):
		return "a whole number"
	case strings.Contains(goType, "float"):
		return "a number"
	case strings.Contains(goType, "bool"):
		return "true or false"
	case strings.Contains(goType, "string"):
		return "a string"
	}
	return "an object"
}

// position is the 1-based line and column of byte offset off.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// keyPosition is where the key "name" first stands (the last part of a
// dotted path such as limits.memoryMb or ports.listen[2]).
func keyPosition(data []byte, path string) (line, col int) {
	key := path
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		key = key[i+1:]
	}
	if i := strings.IndexByte(key, '['); i >= 0 {
		key = key[:i]
	}
	re := regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `"\s*:`)
	if loc := re.FindIndex(data); loc != nil {
		return position(data, loc[0])
	}
	return 1, 1
}

// fieldError is a value out of range, by its key.
type fieldError struct{ key, msg string }

func (e *fieldError) Error() string { return e.key + " " + e.msg }

func bad(key, format string, a ...any) error {
	return &fieldError{key: key, msg: fmt.Sprintf(format, a...)}
}

func checkFsMode(key, v string) error {
	switch backends.FsMode(v) {
	case "", backends.FsStrict, backends.FsAllowlist, backends.FsOpen:
		return nil
	}
	return bad(key, "is %q: it is strict, allowlist or open", v)
}

func checkPorts(key string, ports []int, low int) error {
	for i, p := range ports {
		if p < low || p > 65535 {
			return bad(fmt.Sprintf("%s[%d]", key, i), "is %d: a port is from %d to 65535", p, low)
		}
	}
	return nil
}

func checkPaths(key string, paths []string) error {
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			return bad(fmt.Sprintf("%s[%d]", key, i), "is %q: it must be an absolute path", p)
		}
	}
	return nil
}

func checkNames(key string, names []string) error {
	for i, n := range names {
		if !envNameRE().MatchString(n) {
			return bad(fmt.Sprintf("%s[%d]", key, i), "is %q: a name is letters, digits and _, not starting with a digit", n)
		}
	}
	return nil
}

func checkRange(key string, v *int, lo, hi int) error {
	if v != nil && (*v < lo || *v > hi) {
		return bad(key, "is %d: it is from %d to %d", *v, lo, hi)
	}
	return nil
}

// check refuses values no layer may hold.
func (f File) check() error {
	errs := []error{
		checkFsMode("fsMode", f.FsMode),
		checkPaths("allowlist", f.Allowlist),
		checkPaths("mountAllow", f.MountAllow),
		checkPaths("allowedSockets", f.AllowedSockets),
		checkNames("env", f.Env),
		checkNames("secrets", f.Secrets),
	}
	for i, d := range f.AllowedDomains {
		if strings.TrimSpace(d) == "" || strings.ContainsAny(d, " /:") {
			errs = append(errs, bad(fmt.Sprintf("allowedDomains[%d]", i), "is %q: a domain is a name (example.org) or *.name for it and its subdomains", d))
		}
	}
	for i, r := range f.HTTPRules {
		if strings.TrimSpace(r.Host) == "" {
			errs = append(errs, bad(fmt.Sprintf("httpRules[%d].host", i), "is empty: name the host the rule is for"))
		}
	}
	if p := f.Ports; p != nil {
		errs = append(errs, checkPorts("ports.listen", p.Listen, 1024), checkPorts("ports.connect", p.Connect, 1), checkPorts("ports.loopback", p.Loopback, 1))
	}
	if l := f.Limits; l != nil {
		if l.CPUs != nil && (*l.CPUs < 0.1 || *l.CPUs > 32) {
			errs = append(errs, bad("limits.cpus", "is %g: it is from 0.1 to 32 cores", *l.CPUs))
		}
		errs = append(errs, checkRange("limits.memoryMb", l.MemoryMB, 64, 65536), checkRange("limits.pids", l.Pids, 16, 8192),
			checkRange("limits.timeoutMs", l.TimeoutMs, 1000, 86400000), checkRange("limits.diskMb", l.DiskMB, 0, 1<<20))
	}
	if a := f.AgentShell; a != nil {
		errs = append(errs, checkFsMode("agentShell.fsMode", a.FsMode), checkPorts("agentShell.loopback", a.Loopback, 1))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

//go:embed policy.schema.json
var schema []byte

// Schema is the policy file's JSON schema.
func Schema() []byte { return append([]byte{}, schema...) }
