// The engine's options: its directories, its backends in order of
// preference, and where the network forwarder is.

package daemon

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/app/client"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/diskquota"
	"github.com/senclaw/sandbox/backends/docker"
	"github.com/senclaw/sandbox/backends/landlock"
	"github.com/senclaw/sandbox/backends/limits"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// EngineOptions resolves the engine's directories from the --data-dir
// flag and the environment (client.FindDirs), and builds the backends in
// order of preference.
func EngineOptions(dataDirFlag string, getenv func(string) string, logger *slog.Logger) (app.Options, error) {
	d, err := client.FindDirs(dataDirFlag, getenv)
	if err != nil {
		return app.Options{}, err
	}
	home, dataDir, euid := d.Home, d.Data, os.Geteuid()
	// A root engine gives the backends its own uid of the sandbox range
	// for the sandboxes they start themselves (probes, pooled containers)
	// once it has claimed the range (app/sandboxuid); each run gets its
	// sandbox's own.
	// How runs are limited, shared by bwrap and Landlock: an ordinary
	// user's engine asks systemd's user manager for a delegated scope
	// named after its data dir when it may make no cgroup itself.
	cgroups := limits.NewHost(limits.HostOptions{Scope: "senclaw-" + dataDirHash(dataDir), Getenv: getenv, Logger: logger})
	forwarder := findForwarder(logger)
	offered, err := offeredBackends(getenv("SENCLAW_BACKENDS"), append(nativeBackends(home, logger),
		bwrap.New(bwrap.Options{Logger: logger, Launcher: selfPath(), IDMapDir: filepath.Join(dataDir, "idmap"), Cgroups: cgroups}),
		landlock.New(landlock.Options{Logger: logger, Cgroups: cgroups, Helper: findLandlockHelper(logger)}),
		docker.New(docker.Options{
			Getenv:       getenv,
			HomeDir:      home,
			DefaultImage: app.DefaultSettings().DefaultImage,
			PoolDir:      filepath.Join(dataDir, "docker-pool"),
			HardQuota:    true,
			Owner:        DockerOwner(dataDir),
			Forwarder:    forwarder,
			Logger:       logger,
		}),
		direct.New(direct.Options{Launcher: selfPath(), Reaper: selfPath()}),
	))
	if err != nil {
		return app.Options{}, err
	}
	// Facilities shown with the capabilities that are not backends.
	probes := []app.Prober{app.ProbeFunc(unixguard.Name, func(context.Context) backends.Capability { return unixguard.Probe() })}
	if runtime.GOOS == "linux" {
		probes = append(probes, app.ProbeFunc(limits.FacilityName, func(context.Context) backends.Capability { return cgroups.Probe() }))
	}
	hostPolicy := strings.TrimSpace(getenv("SENCLAW_EXEC_TENANT_HOST_POLICY"))
	if hostPolicy != "" {
		if err := app.CheckTenantHostPolicy("SENCLAW_EXEC_TENANT_HOST_POLICY", hostPolicy); err != nil {
			return app.Options{}, err
		}
	}
	return app.Options{
		TenantHostPolicy: hostPolicy,
		DataDir:          dataDir,
		ConfigDir:        d.Config,
		RuntimeDir:       d.Runtime,
		HomeDir:          home,
		Backends:         offered,
		Logger:           logger,
		EUID:             euid,
		Forwarder:        forwarder,
		Disks:            diskquota.NewImages(filepath.Join(dataDir, "disks"), logger),
		SessionBus:       sessionBus(),
		// The named Docker engines of the settings carry the same owner
		// (with an id of the engine's own) and find contexts the same way.
		DockerOwner: DockerOwner(dataDir),
		DockerEnv:   os.Getenv,
		Probes:      probes,
	}, nil
}

// sessionBus is the D-Bus session bus where the engine asks the Secret
// Service to keep secrets: DBUS_SESSION_BUS_ADDRESS, else the socket "bus"
// in the runtime dir when there is one; "" when there is none (a server, a
// root engine in CI): secrets are then sealed in the store. It never
// starts a bus ("autolaunch:" counts as none).
func sessionBus() string {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return a
	}
	for _, dir := range []string{os.Getenv("XDG_RUNTIME_DIR"), "/run/user/" + strconv.Itoa(os.Getuid())} {
		if dir == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, "bus")); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return "unix:path=" + filepath.Join(dir, "bus")
		}
	}
	return ""
}

// selfPath is this executable's real path ("" when unknown): it is also
// each of the engine's helpers (the reexec table: the envexec launcher,
// the direct backend's subreaper, the idmap launcher).
func selfPath() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		return real
	}
	return self
}

// findForwarder finds senclaw-netfwd, the in-sandbox forwarder (it loads
// the Unix socket guard and relays the network): next to this executable
// (a build in a clone), in ../lib/senclaw beside it (where make install
// and the Debian package put it), else on PATH. A candidate that another
// user could replace, or whose folder they could, is passed over with a
// warning: the forwarder is what puts the guard in front of every
// sandboxed command. "" when there is none: the engine then refuses bwrap
// runs and runs that need network, and says how to build it.
func findForwarder(logger *slog.Logger) string {
	var candidates []string
	for _, dir := range helperDirs() {
		candidates = append(candidates, filepath.Join(dir, "senclaw-netfwd"))
	}
	if p, err := exec.LookPath("senclaw-netfwd"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			candidates = append(candidates, abs)
		}
	}
	return forwarderIn(candidates, logger)
}

// forwarderIn is the first of candidates that is an executable file no
// other user could replace, "" for none.
func forwarderIn(candidates []string, logger *slog.Logger) string {
	for _, p := range candidates {
		p = filepath.Clean(p)
		if _, ok := ownHelper(p, logger, "the next one is looked for; keep it in a folder only root or you may write (make build, or reinstall the package)."); ok {
			return p
		}
	}
	return ""
}

// ownHelper reports whether p is an executable file (found) and whether
// no other user could replace it or its folders (ok). One found but not
// ok is warned of in logger, with instead: what the engine does then.
func ownHelper(p string, logger *slog.Logger, instead string) (found, ok bool) {
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return false, false
	}
	if err := ownExecutable(p); err != nil {
		if logger != nil {
			logger.Warn(filepath.Base(p)+" is not used: another user could replace it; "+instead, "path", p, "err", err)
		}
		return true, false
	}
	return true, true
}

// findLandlockHelper finds senclaw-landlock, the Landlock helper on its
// own, next to this executable or in ../lib/senclaw beside it (never on
// PATH), and uses it only if it reads the setup this engine writes
// (landlock.Protocol): a stale build beside a new engine is left out,
// with a warning. "" (also off Linux) makes the Landlock backend start
// this executable as its helper, which works the same and starts slower.
func findLandlockHelper(logger *slog.Logger) string {
	if runtime.GOOS != "linux" {
		return ""
	}
	return landlockHelperIn(helperDirs(), logger)
}

// helperDirs are where the engine's helper binaries are looked for: the
// folder of this executable (a build in a clone) and ../lib/senclaw
// beside it (make install, the Debian package); none when this
// executable's path is unknown.
func helperDirs() []string {
	self := selfPath()
	if self == "" {
		return nil
	}
	dir := filepath.Dir(self)
	return []string{dir, filepath.Join(dir, "..", "lib", "senclaw")}
}

// landlockHelperIn is the first senclaw-landlock in dirs that reads this
// engine's setup, "" for none.
func landlockHelperIn(dirs []string, logger *slog.Logger) string {
	for _, dir := range dirs {
		p := filepath.Clean(filepath.Join(dir, "senclaw-landlock"))
		// The helper runs as the engine's user, root's for a root
		// engine, before it confines itself: one that another user could
		// replace, or whose folder they could, is never started.
		found, ok := ownHelper(p, logger, "the engine starts itself as the Landlock helper.")
		if !found {
			continue
		}
		if !ok {
			return ""
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cmd := exec.CommandContext(ctx, p, "--protocol")
		cmd.Env = backends.HelperEnv()
		out, err := cmd.Output()
		cancel()
		if got := strings.TrimSpace(string(out)); err != nil || got != landlock.Protocol() {
			if logger != nil {
				logger.Warn("senclaw-landlock is of another build than the engine, so the engine starts itself as the Landlock helper; rebuild both (make build, or reinstall the package).",
					"path", p, "protocol", got, "want", landlock.Protocol(), "err", err)
			}
			return ""
		}
		return p
	}
	return ""
}

// DockerOwner labels this engine's containers so that engines of other
// users (or other data dirs) on the same daemon leave them alone.
func DockerOwner(dataDir string) string {
	return fmt.Sprintf("uid%d-%s", os.Getuid(), dataDirHash(dataDir))
}

// dataDirHash names what is this data dir's on a machine shared with
// other engines (Docker labels, the systemd scope): 12 hex digits.
func dataDirHash(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return fmt.Sprintf("%x", sum[:6])
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// offeredBackends keeps the backends that SENCLAW_BACKENDS names (a comma
// list, e.g. "bwrap,direct" to keep this engine off Landlock and Docker),
// in their order of preference; "" keeps them all. A name that is no
// backend is an error, not ignored.
func offeredBackends(names string, all []backends.Backend) ([]backends.Backend, error) {
	if strings.TrimSpace(names) == "" {
		return all, nil
	}
	known := map[string]bool{}
	for _, b := range all {
		known[b.Name()] = true
	}
	want := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if !known[n] {
			var valid []string
			for _, b := range all {
				valid = append(valid, b.Name())
			}
			return nil, fmt.Errorf("SENCLAW_BACKENDS names %q, which is not a backend of this engine (%s)", n, strings.Join(valid, ", "))
		}
		want[n] = true
	}
	var out []backends.Backend
	for _, b := range all {
		if want[b.Name()] {
			out = append(out, b)
		}
	}
	return out, nil
}
