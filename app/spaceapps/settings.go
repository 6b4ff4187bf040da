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

// Bounds of the lists.
const (
	MaxHosts   = netproxy.MaxDomains
	MaxFolders = 16
)

// defaultSettings are what an app gets when its manifest says nothing: a
// sandbox, with open reads and network all (what an unconfined app could
// do, less this machine's services, writes outside its directory and the
// secret folders). Running with none takes "enabled": false.
func defaultSettings() SandboxSettings {
	return SandboxSettings{Enabled: true, ReadMode: string(backends.FsOpen), Network: NetworkAll, Hosts: []string{}, AllowHTTP: []backends.HTTPRule{}, Loopback: []int{}, Folders: []Folder{}, Backend: "auto"}
}

// Who turned an app's sandbox off (record.DisabledBy).
const (
	DisabledByManifest = "manifest"
	DisabledByOwner    = "owner"
)

// applyManifest lays the manifest's sandbox block over s.
func applyManifest(s SandboxSettings, b *ManifestSandbox) SandboxSettings {
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
	if b.AllowHTTP != nil {
		s.AllowHTTP = slices.Clone(b.AllowHTTP)
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

// mergedSettings is s with p's fields over it (not yet checked).
func mergedSettings(s SandboxSettings, p SandboxPatch) SandboxSettings {
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
	if p.AllowHTTP != nil {
		s.AllowHTTP = *p.AllowHTTP
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

func sameRule(a, b backends.HTTPRule) bool {
	return a.Host == b.Host && slices.Equal(a.Methods, b.Methods) && slices.Equal(a.Paths, b.Paths)
}

// changedFields names the fields that differ between a and b.
func changedFields(a, b SandboxSettings) []string {
	var out []string
	eq := map[string]bool{
		"enabled":   a.Enabled == b.Enabled,
		"readMode":  a.ReadMode == b.ReadMode,
		"network":   a.Network == b.Network,
		"hosts":     slices.Equal(a.Hosts, b.Hosts),
		"allowHttp": slices.EqualFunc(a.AllowHTTP, b.AllowHTTP, sameRule),
		"loopback":  slices.Equal(a.Loopback, b.Loopback),
		"folders":   slices.Equal(a.Folders, b.Folders),
		"backend":   a.Backend == b.Backend,
		"image":     a.Image == b.Image,
		"daemonApi": a.DaemonAPI == b.DaemonAPI,
	}
	for _, f := range []string{"enabled", "readMode", "folders", "network", "hosts", "allowHttp", "loopback", "backend", "image", "daemonApi"} {
		if !eq[f] {
			out = append(out, f)
		}
	}
	return out
}
