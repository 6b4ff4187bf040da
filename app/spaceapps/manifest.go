package spaceapps

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
)

// ManifestFile is the manifest's name at the root of an app's directory.
const ManifestFile = "senclaw-app.json"

// Manifest is senclaw-app.json: what the app is, how it runs, what it
// needs and how it asks to be confined. senclaw-app.schema.json describes
// the same fields (a test keeps the two in step).
type Manifest struct {
	// ID is the app's slug: lower-case letters, digits and dashes.
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Runtime     ManifestRuntime `json:"runtime"`
	Requires    Requires        `json:"requires,omitzero"`
	// Sandbox, when set, is how the app asks to be confined: the
	// defaults of its sandbox configuration, or with Force, what it
	// always gets.
	Sandbox *ManifestSandbox `json:"sandbox,omitempty"`
}

// ManifestRuntime is how the app's server runs.
type ManifestRuntime struct {
	// Start is a shell command (/bin/sh -c) run in the app's directory.
	Start string `json:"start"`
	// Port is where the server listens on 127.0.0.1; 0 lets the engine
	// pick a free one, passed in PORT (always set).
	Port int `json:"port"`
	// HealthPath answers 2xx when the server is up (DefaultHealthPath).
	HealthPath string `json:"healthPath,omitempty"`
	// StartTimeoutSec bounds the wait for the first 2xx (default 30);
	// StopTimeoutSec is the time between SIGTERM and SIGKILL (default 10).
	StartTimeoutSec int `json:"startTimeoutSec,omitempty"`
	StopTimeoutSec  int `json:"stopTimeoutSec,omitempty"`
	// Restart is on-failure (default), always or never, as systemd's
	// Restart=.
	Restart string `json:"restart,omitempty"`
	// Autostart starts the app with the engine (unless a person stopped
	// it).
	Autostart bool `json:"autostart,omitempty"`
}

// Requires is what the app needs from this machine, checked when it is
// registered and before every launch.
type Requires struct {
	// Bin are programs that must be on the sandbox's PATH.
	Bin []string `json:"bin,omitempty"`
	// Python and Node are the least versions needed ("3.9", ">=18", or
	// "*" for any).
	Python string `json:"python,omitempty"`
	Node   string `json:"node,omitempty"`
	// Env are variables the app's environment must set (given when it
	// is registered).
	Env []string `json:"env,omitempty"`
}

// ManifestSandbox is the manifest's sandbox block.
type ManifestSandbox struct {
	// Force makes the block what the app always gets: enabled, and
	// re-applied at every registration; it cannot be disabled.
	Force     bool                `json:"force,omitempty"`
	Enabled   *bool               `json:"enabled,omitempty"`
	ReadMode  string              `json:"readMode,omitempty"`
	Network   string              `json:"network,omitempty"`
	Hosts     []string            `json:"hosts,omitempty"`
	AllowHTTP []backends.HTTPRule `json:"allowHttp,omitempty"`
	Loopback  []int               `json:"loopback,omitempty"`
	Folders   []Folder            `json:"folders,omitempty"`
	Backend   string              `json:"backend,omitempty"`
	Image     string              `json:"image,omitempty"`
	DaemonAPI *bool               `json:"daemonApi,omitempty"`
}

// Defaults of the manifest's runtime.
const (
	DefaultHealthPath      = "/health"
	DefaultStartTimeoutSec = 30
	DefaultStopTimeoutSec  = 10
	MaxStartTimeoutSec     = 600
	MaxStopTimeoutSec      = 300
)

// Restart policies, as systemd's Restart=.
const (
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
	RestartNever     = "never"
)

var (
	slugRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`) })
	binRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._+-]{1,64}$`) })
	versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(>=\s*)?[0-9]{1,4}(\.[0-9]{1,4}){0,2}$`) })
	envKeyRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// ParseManifest decodes and checks a manifest. Unknown fields and bad
// values are *app.FieldError naming the field; defaults are filled in.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > 256<<10 {
		return nil, &app.FieldError{Field: ManifestFile, Value: len(data), Reason: "is larger than 256 KiB"}
	}
	var m Manifest
	if err := decodeStrict(data, &m, ManifestFile); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return &m, nil
}

func bad(field string, value any, format string, args ...any) error {
	return &app.FieldError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// check validates m and fills in its defaults.
func (m *Manifest) check() error {
	if !slugRE().MatchString(m.ID) {
		return bad("id", m.ID, "must be a slug: 1 to 63 lower-case letters, digits and dashes, starting with a letter or digit")
	}
	if err := checkText("name", m.Name, 1, 100); err != nil {
		return err
	}
	if err := checkText("description", m.Description, 0, 1000); err != nil {
		return err
	}
	r := &m.Runtime
	switch {
	case strings.TrimSpace(r.Start) == "":
		return bad("runtime.start", r.Start, "is empty: give the shell command that starts the server")
	case len(r.Start) > 4096 || strings.ContainsRune(r.Start, 0):
		return bad("runtime.start", nil, "must be at most 4096 bytes with no NUL byte")
	}
	if err := checkAppPort("runtime.port", r.Port); err != nil {
		return err
	}
	if r.HealthPath == "" {
		r.HealthPath = DefaultHealthPath
	}
	if !strings.HasPrefix(r.HealthPath, "/") || len(r.HealthPath) > 512 || strings.ContainsAny(r.HealthPath, " \t\r\n#") || !utf8.ValidString(r.HealthPath) {
		return bad("runtime.healthPath", r.HealthPath, "must be a URL path starting with / (no spaces or fragment), at most 512 bytes")
	}
	if r.StartTimeoutSec == 0 {
		r.StartTimeoutSec = DefaultStartTimeoutSec
	}
	if r.StartTimeoutSec < 1 || r.StartTimeoutSec > MaxStartTimeoutSec {
		return bad("runtime.startTimeoutSec", r.StartTimeoutSec, "must be between 1 and %d seconds", MaxStartTimeoutSec)
	}
	if r.StopTimeoutSec == 0 {
		r.StopTimeoutSec = DefaultStopTimeoutSec
	}
	if r.StopTimeoutSec < 1 || r.StopTimeoutSec > MaxStopTimeoutSec {
		return bad("runtime.stopTimeoutSec", r.StopTimeoutSec, "must be between 1 and %d seconds", MaxStopTimeoutSec)
	}
	switch r.Restart {
	case "":
		r.Restart = RestartOnFailure
	case RestartOnFailure, RestartAlways, RestartNever:
	default:
		return bad("runtime.restart", r.Restart, "must be on-failure, always or never (as systemd's Restart=)")
	}
	if err := m.Requires.check(); err != nil {
		return err
	}
	if m.Sandbox != nil {
		return m.Sandbox.check()
	}
	return nil
}

// checkText refuses control characters and lengths outside lo..hi runes.
func checkText(field, v string, lo, hi int) error {
	n := utf8.RuneCountInString(v)
	if n < lo || n > hi || !utf8.ValidString(v) {
		return bad(field, v, "must be %d to %d characters of UTF-8", lo, hi)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
			return bad(field, v, "must not contain control or bidirectional-override characters")
		}
	}
	return nil
}

// checkAppPort: 0 (the engine picks one), or a port the engine may
// forward (1024 and up, not the in-sandbox proxy's own).
func checkAppPort(field string, p int) error {
	switch {
	case p == 0:
		return nil
	case p < 1024 || p > 65535:
		return bad(field, p, "must be 0 (the engine picks a free port and passes it in PORT) or between 1024 and 65535 (ports below 1024 are privileged)")
	case netfwd.Reserved(p):
		return bad(field, p, "is taken inside every sandbox by the proxy forwarder (%d, %d); pick another port", netfwd.HTTPPort, netfwd.SOCKSPort)
	}
	return nil
}

func (q *Requires) check() error {
	if len(q.Bin) > 32 {
		return bad("requires.bin", len(q.Bin), "at most 32 programs")
	}
	for i, b := range q.Bin {
		if !binRE().MatchString(b) {
			return bad(fmt.Sprintf("requires.bin[%d]", i), b, "must be a program name (letters, digits, . _ + -), looked up on the sandbox's PATH")
		}
	}
	for _, v := range []struct{ field, val string }{{"requires.python", q.Python}, {"requires.node", q.Node}} {
		if v.val != "" && v.val != "*" && !versionRE().MatchString(v.val) {
			return bad(v.field, v.val, `must be the least version needed, like "3.9" or ">=18.2", or "*" for any`)
		}
	}
	if len(q.Env) > 64 {
		return bad("requires.env", len(q.Env), "at most 64 variables")
	}
	for i, k := range q.Env {
		if !envKeyRE().MatchString(k) {
			return bad(fmt.Sprintf("requires.env[%d]", i), k, "must be a variable name: letters, digits and _, not starting with a digit")
		}
	}
	return nil
}

func (s *ManifestSandbox) check() error {
	if s.ReadMode != "" {
		if err := checkReadMode("sandbox.readMode", s.ReadMode); err != nil {
			return err
		}
	}
	if s.Network != "" {
		if err := checkNetworkMode("sandbox.network", s.Network); err != nil {
			return err
		}
	}
	hosts, err := normalizeHosts("sandbox.hosts", s.Hosts)
	if err != nil {
		return err
	}
	s.Hosts = hosts
	if _, err := checkLoopback("sandbox.loopback", s.Loopback); err != nil {
		return err
	}
	if err := checkFolderList("sandbox.folders", s.Folders); err != nil {
		return err
	}
	if s.Image != "" {
		if err := checkImage("sandbox.image", s.Image); err != nil {
			return err
		}
	}
	if s.Enabled != nil && !*s.Enabled && s.Force {
		return bad("sandbox.enabled", false, "contradicts sandbox.force: a forced sandbox is always enabled")
	}
	return nil
}
