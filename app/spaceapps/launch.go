package spaceapps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
)

// config turns the settings into the rules of the app's sandbox. Always
// granted: the app's own directory read-write (the workspace) and a
// private /tmp; its port is reachable from this machine at 127.0.0.1
// only. Network modes: all is any public address; hosts is only the names
// in Hosts (nothing with an empty list); off is no egress. In every mode
// this machine's services stay closed but for the loopback ports.
func (s SandboxSettings) config(port int) app.SandboxConfig {
	fs := s.ReadMode
	c := app.SandboxConfig{
		FsMode:   &fs,
		Mounts:   []backends.Mount{},
		Listen:   []int{port},
		Connect:  []int{},
		Loopback: s.Loopback,
		Domains:  []string{},
	}
	if s.Loopback == nil {
		c.Loopback = []int{}
	}
	for _, f := range s.Folders {
		c.Mounts = append(c.Mounts, backends.Mount{Source: f.Path, Target: filepath.Base(filepath.Clean(f.Path)), ReadOnly: f.ReadOnly})
	}
	network := false
	switch s.Network {
	case NetworkAll:
		network = true
	case NetworkHosts:
		network = len(s.Hosts) > 0
		c.Domains = s.Hosts
	}
	c.Network = &network
	backend := s.Backend
	if backend == "" {
		backend = "auto"
	}
	c.Backend = &backend
	if s.Image != "" {
		img := s.Image
		c.Image = &img
	}
	return c
}

// effectiveBackend is the backend a launch of set gets: direct without a
// sandbox, the named one, or for auto the engine's recommended one.
func (s *Supervisor) effectiveBackend(ctx context.Context, set SandboxSettings) string {
	switch {
	case !set.Enabled:
		return "direct"
	case set.Backend != "" && set.Backend != "auto":
		return set.Backend
	}
	return s.e.Capabilities(ctx, false).Recommended
}

// privateTmp is the private temp dir of an app run without a sandbox
// (under the engine's data dir; a sandboxed app has its own /tmp).
func (s *Supervisor) privateTmp(id string) (string, error) {
	dir := filepath.Join(s.dirs.tmp, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the app's temp dir: %w", err)
	}
	if u := s.sandboxUser(); u >= 0 {
		_ = os.Lchown(dir, u, u)
	}
	return dir, nil
}

// runUID is the host uid app processes run as: the sandbox user when the
// engine is root (also without a sandbox), else the engine's own.
func (s *Supervisor) runUID() int {
	if u := s.sandboxUser(); u >= 0 {
		return u
	}
	return os.Geteuid()
}

// sandboxUser is the sandbox user's uid when the engine is root, else -1.
func (s *Supervisor) sandboxUser() int {
	if os.Geteuid() != 0 {
		return -1
	}
	return int(s.e.Settings().SandboxUID)
}

// bannerLine is the log's line before a launch's output: what it got.
func (s *Supervisor) bannerLine(id string, f *LaunchFacts, rec record) string {
	set := f.Settings
	var how string
	if !set.Enabled {
		how = "no sandbox (its sandbox is disabled): it runs on this machine with no barrier, with an environment built from nothing"
	} else {
		net := set.Network
		if set.Network == NetworkHosts {
			net += " [" + strings.Join(set.Hosts, ", ") + "]"
		}
		how = fmt.Sprintf("read mode %s, network %s, loopback %s, folders %d", set.ReadMode, net, portList(set.Loopback), len(set.Folders))
	}
	return fmt.Sprintf("launch %d of %s at %s: isolation %s (backend %s; %s); pid %d, port %d, command %s",
		f.N, id, f.At.Format("2006-01-02T15:04:05Z"), f.Isolation, f.Backend, how, f.Pid, f.Port, oneLine(f.Command, 200))
}

func portList(ports []int) string {
	if len(ports) == 0 {
		return "none"
	}
	return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ports)), ","), "[]")
}

var secretKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(token|secret|passw|pwd|key|credential|auth|private|cookie|session|dsn|database_url)`)
})

// maskEnv is env as shown to people: values of variables whose names say
// they are secrets are masked.
func maskEnv(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		if secretKey().MatchString(k) {
			v = "••••••"
		}
		out[k] = v
	}
	return out
}
