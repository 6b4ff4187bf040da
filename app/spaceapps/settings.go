package spaceapps

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/netproxy"
	"github.com/senclaw/sandbox/backends"
)

// SandboxSettings are an app's stored sandbox configuration, with the
// reference's names.
type SandboxSettings struct {
	// Enabled runs the app in a sandbox; off runs it on this machine with
	// no barrier (isolation "none").
	Enabled bool `json:"enabled"`
	// ReadMode is what it may read: strict, allowlist or open.
	ReadMode string `json:"readMode"`
	// Network is all (any public address; this machine's services only
	// through Loopback), hosts (only the names in Hosts) or off.
	Network string `json:"network"`
	// Hosts are the names the hosts mode allows: exact, or "*.name" for
	// the name and its subdomains.
	Hosts []string `json:"hosts"`
	// Loopback are this machine's service ports the app may call.
	Loopback []int `json:"loopback"`
	// Folders are host folders the app sees inside its directory, at
	// their base name.
	Folders []Folder `json:"folders"`
	// Backend is auto, or an isolating backend of this engine (bwrap,
	// docker, ...).
	Backend string `json:"backend"`
	// Image is the container image for a container backend ("" is the
	// engine's default image).
	Image string `json:"image"`
	// DaemonAPI gives the app a token of its own for the engine's API,
	// which reaches only its own runtime and logs.
	DaemonAPI bool `json:"daemonApi"`
}

// Folder is a host folder an app is given.
type Folder struct {
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly"`
}

// Network modes.
const (
	NetworkAll   = "all"
	NetworkHosts = "hosts"
	NetworkOff   = "off"
)

// Bounds of the lists.
const (
	MaxHosts   = netproxy.MaxDomains
	MaxFolders = 16
)

// defaultSettings are the reference's defaults: no sandbox, open reads,
// network all.
func defaultSettings() SandboxSettings {
	return SandboxSettings{ReadMode: string(backends.FsOpen), Network: NetworkAll, Hosts: []string{}, Loopback: []int{}, Folders: []Folder{}, Backend: "auto"}
}

// apply lays the manifest's sandbox block over s.
func (s SandboxSettings) apply(b *ManifestSandbox) SandboxSettings {
	if b == nil {
		return s
	}
	if b.Enabled != nil {
		s.Enabled = *b.Enabled
	}
	if b.Force {
		s.Enabled = true
	}
	if b.ReadMode != "" {
		s.ReadMode = b.ReadMode
	}
	if b.Network != "" {
		s.Network = b.Network
	}
	if b.Hosts != nil {
		s.Hosts = slices.Clone(b.Hosts)
	}
	if b.Loopback != nil {
		s.Loopback, _ = checkLoopback("", b.Loopback)
	}
	if b.Folders != nil {
		s.Folders = slices.Clone(b.Folders)
	}
	if b.Backend != "" {
		s.Backend = b.Backend
	}
	if b.Image != "" {
		s.Image = b.Image
	}
	if b.DaemonAPI != nil {
		s.DaemonAPI = *b.DaemonAPI
	}
	return s
}

// SandboxPatch changes some of an app's sandbox settings: a field left
// out (null) keeps its value; a list given replaces the old one.
type SandboxPatch struct {
	Enabled   *bool     `json:"enabled"`
	ReadMode  *string   `json:"readMode"`
	Network   *string   `json:"network"`
	Hosts     *[]string `json:"hosts"`
	Loopback  *[]int    `json:"loopback"`
	Folders   *[]Folder `json:"folders"`
	Backend   *string   `json:"backend"`
	Image     *string   `json:"image"`
	DaemonAPI *bool     `json:"daemonApi"`
}

// merged is s with p's fields over it (not yet checked).
func (s SandboxSettings) merged(p SandboxPatch) SandboxSettings {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	if p.Enabled != nil {
		s.Enabled = *p.Enabled
	}
	set(&s.ReadMode, p.ReadMode)
	set(&s.Network, p.Network)
	set(&s.Backend, p.Backend)
	set(&s.Image, p.Image)
	if p.Hosts != nil {
		s.Hosts = *p.Hosts
	}
	if p.Loopback != nil {
		s.Loopback = *p.Loopback
	}
	if p.Folders != nil {
		s.Folders = *p.Folders
	}
	if p.DaemonAPI != nil {
		s.DaemonAPI = *p.DaemonAPI
	}
	return s
}

func checkReadMode(field, v string) error {
	if !backends.FsMode(v).Valid() {
		return bad(field, v, "must be strict, allowlist or open")
	}
	return nil
}

func checkNetworkMode(field, v string) error {
	switch v {
	case NetworkAll, NetworkHosts, NetworkOff:
		return nil
	}
	return bad(field, v, "must be all (any public address), hosts (only the names in hosts) or off (no egress)")
}

// localNames are names that mean this machine or a cloud metadata
// service besides those netproxy refuses itself.
var localNames = []string{"localhost.localdomain", "ip6-localhost", "ip6-loopback", "metadata", "instance-data", "instance-data.ec2.internal", "metadata.azure.internal"}

// normalizeHosts checks an allowed-hosts list: a pasted URL becomes its
// host, "*." is allowed only in front, and names of this machine, cloud
// metadata services and address literals are refused. It returns the list
// normalised (lower case, ASCII, sorted, without duplicates).
func normalizeHosts(field string, in []string) ([]string, error) {
	if len(in) > MaxHosts {
		return nil, bad(field, len(in), "at most %d hosts", MaxHosts)
	}
	list := make([]string, 0, len(in))
	for i, raw := range in {
		h := strings.TrimSpace(raw)
		if strings.Contains(h, "://") {
			u, err := url.Parse(h)
			if err != nil || u.Hostname() == "" {
				return nil, bad(fmt.Sprintf("%s[%d]", field, i), raw, "is not a host name or a URL with one")
			}
			h = u.Hostname()
		} else if host, _, ok := strings.Cut(h, "/"); ok {
			h = host // example.org/path
		}
		if hp, port, ok := strings.Cut(h, ":"); ok && !strings.Contains(port, ":") && !strings.HasPrefix(h, "[") {
			h = hp // example.org:443
		}
		name := strings.TrimPrefix(strings.ToLower(strings.TrimSuffix(h, ".")), "*.")
		if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
			return nil, bad(fmt.Sprintf("%s[%d]", field, i), raw, "is an address, not a host name: addresses of this machine are reached through loopback ports, and others are not allowed by name")
		}
		if slices.Contains(localNames, name) || strings.HasSuffix(name, ".localhost") || name == "localhost" {
			return nil, bad(fmt.Sprintf("%s[%d]", field, i), raw, "names this machine or a cloud metadata service; use loopback ports for this machine's services")
		}
		list = append(list, h)
	}
	out, badHost, err := netproxy.NormalizeDomains(list, true)
	if err != nil {
		i := slices.Index(list, badHost)
		if i < 0 {
			return nil, bad(field, len(in), "%v", err)
		}
		return nil, bad(fmt.Sprintf("%s[%d]", field, i), in[i], "%v", err)
	}
	return out, nil
}

// checkLoopback validates loopback ports and returns them sorted and
// without duplicates.
func checkLoopback(field string, ports []int) ([]int, error) {
	out := slices.Clone(ports)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > app.MaxPorts {
		return nil, bad(field, len(out), "at most %d ports", app.MaxPorts)
	}
	for _, p := range out {
		if p < 1 || p > 65535 {
			return nil, bad(field, p, "ports must be between 1 and 65535")
		}
	}
	if out == nil {
		out = []int{}
	}
	return out, nil
}

func checkFolderList(field string, fs []Folder) error {
	if len(fs) > MaxFolders {
		return bad(field, len(fs), "at most %d folders", MaxFolders)
	}
	seen := map[string]bool{}
	for i, f := range fs {
		if !filepath.IsAbs(f.Path) {
			return bad(fmt.Sprintf("%s[%d].path", field, i), f.Path, "must be an absolute path")
		}
		base := filepath.Base(filepath.Clean(f.Path))
		if seen[base] {
			return bad(fmt.Sprintf("%s[%d].path", field, i), f.Path, "has the same name (%s) as another folder: each appears in the app's directory under its name", base)
		}
		seen[base] = true
	}
	return nil
}

func checkImage(field, v string) error {
	if len(v) > 255 || strings.ContainsAny(v, " \t\r\n") || strings.HasPrefix(v, "-") {
		return bad(field, v, "is not a container image reference")
	}
	return nil
}

// launchFixed lists the settings that a running process got at launch and
// keeps until it is restarted, in the order shown to people.
var launchFixed = []string{"enabled", "readMode", "folders", "network", "loopback", "backend", "image", "daemonApi"}

// changedFields names the fields that differ between a and b.
func changedFields(a, b SandboxSettings) []string {
	var out []string
	eq := map[string]bool{
		"enabled":   a.Enabled == b.Enabled,
		"readMode":  a.ReadMode == b.ReadMode,
		"network":   a.Network == b.Network,
		"hosts":     slices.Equal(a.Hosts, b.Hosts),
		"loopback":  slices.Equal(a.Loopback, b.Loopback),
		"folders":   slices.Equal(a.Folders, b.Folders),
		"backend":   a.Backend == b.Backend,
		"image":     a.Image == b.Image,
		"daemonApi": a.DaemonAPI == b.DaemonAPI,
	}
	for _, f := range []string{"enabled", "readMode", "folders", "network", "hosts", "loopback", "backend", "image", "daemonApi"} {
		if !eq[f] {
			out = append(out, f)
		}
	}
	return out
}
