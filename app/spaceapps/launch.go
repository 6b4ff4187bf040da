package spaceapps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
)

// launchConfig turns the settings into the rules of the app's sandbox. Always
// granted: the app's own directory read-write (the workspace) and a
// private /tmp; its port is reachable from this machine at 127.0.0.1
// only. Network modes: all is any public address; hosts is only the names
// in Hosts (nothing with an empty list), each limited by the AllowHTTP
// rules that name it; off is no egress. In every mode
// this machine's services stay closed but for the loopback ports.
func launchConfig(s SandboxSettings, port int) app.SandboxConfig {
	fs := s.ReadMode
	c := app.SandboxConfig{
		FsMode:   &fs,
		Mounts:   []backends.Mount{},
		Listen:   []int{},
		Connect:  []int{},
		Loopback: s.Loopback,
		Domains:  []string{},
	}
	if port > 0 {
		c.Listen = []int{port} // 0: not known yet (a registration)
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
		c.AllowHTTP = s.AllowHTTP
	}
	if c.AllowHTTP == nil {
		c.AllowHTTP = []backends.HTTPRule{}
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
// (under the engine's data dir; a sandboxed app has its own /tmp), the
// app's user's.
func (s *Supervisor) privateTmp(id string) (string, error) {
	dir := filepath.Join(s.dirs.tmp, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the app's temp dir: %w", err)
	}
	if u := s.appUser(id); u != nil {
		if err := os.Lchown(dir, int(u.UID), int(u.GID)); err != nil {
			return "", fmt.Errorf("giving the app's temp dir to its uid %d: %w", u.UID, err)
		}
	}
	return dir, nil
}

// runUID is the host uid app id's processes run as: its sandbox's own
// uid when the engine is root (also without a sandbox: a root engine
// never runs an app as root, nor as any other sandbox's uid), else the
// engine's own.
func (s *Supervisor) runUID(id string) int {
	if u := s.appUser(id); u != nil {
		return int(u.UID)
	}
	return os.Geteuid()
}

// appUser is who app id runs as: its sandbox's user (nil for an engine
// that is not root, or an app with no sandbox yet).
func (s *Supervisor) appUser(id string) *backends.Credential {
	u, err := s.e.SandboxUser(sandboxID(id))
	if err != nil {
		return nil
	}
	return u
}

// ensureUser gives app id, registered from dir, the sandbox its files
// are to belong to, made now with set when it has none yet (an app's
// sandbox is otherwise made at its first launch): a root engine hands
// the app's files to that sandbox's uid. created says it was made now.
func (s *Supervisor) ensureUser(ctx context.Context, id, dir string, set SandboxSettings, port int) (u *backends.Credential, created bool, err error) {
	u, err = s.e.SandboxUser(sandboxID(id))
	var nf *app.NotFoundError
	if !errors.As(err, &nf) {
		return u, false, err
	}
	sb, err := s.e.PutAppSandbox(ctx, app.AppSandbox{ID: sandboxID(id), Name: "app:" + id, Dir: dir, Config: launchConfig(set, port)})
	if err != nil {
		return nil, false, err
	}
	u, err = s.e.SandboxUser(sb.ID)
	return u, err == nil, err
}

// bannerLine is the log's line before a launch's output: what it got.
func (s *Supervisor) bannerLine(id string, f *LaunchFacts, rec record) string {
	set := f.Settings
	var how string
	if !set.Enabled {
		by := rec.DisabledBy
		if by == "" {
			by = "disabled"
		}
		how = "no sandbox (" + by + "): it runs on this machine with no barrier, with an environment built from nothing"
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
