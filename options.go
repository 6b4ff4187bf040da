// The engine's options: its directories, its backends in order of
// preference, and where the network forwarder is.

package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/diskquota"
	"github.com/senclaw/sandbox/backends/docker"
	"github.com/senclaw/sandbox/backends/landlock"
	"github.com/senclaw/sandbox/backends/unixguard"
)

// dirs are the engine's directories, from the flag and the environment.
type dirs struct {
	home, data, config, runtime string
}

// engineDirs resolves the engine's directories: all a command needs to
// reach the daemon, which builds no backend.
func engineDirs(dataDirFlag string) (dirs, error) {
	home, _ := os.UserHomeDir()
	euid := os.Geteuid()
	dataDir := firstNonEmpty(dataDirFlag, os.Getenv("SENCLAW_DATA_DIR"))
	if dataDir == "" {
		switch {
		case os.Getenv("XDG_DATA_HOME") != "":
			dataDir = filepath.Join(os.Getenv("XDG_DATA_HOME"), "senclaw")
		case euid == 0:
			// A root engine runs sandboxed code as an unprivileged user,
			// which must be able to reach its workspace: /root is private.
			dataDir = "/var/lib/senclaw"
		case home != "":
			dataDir = filepath.Join(home, ".local", "share", "senclaw")
		default:
			return dirs{}, fmt.Errorf("no data dir: set --data-dir or SENCLAW_DATA_DIR")
		}
	}
	configDir := os.Getenv("XDG_CONFIG_HOME")
	if configDir == "" && home != "" {
		configDir = filepath.Join(home, ".config")
	}
	if configDir != "" {
		configDir = filepath.Join(configDir, "senclaw")
	}
	runtimeDir := os.Getenv("XDG_RUNTIME_DIR")
	if runtimeDir == "" {
		runtimeDir = filepath.Join(os.TempDir(), "senclaw-"+strconv.Itoa(os.Getuid()))
	} else {
		runtimeDir = filepath.Join(runtimeDir, "senclaw")
	}
	return dirs{home: home, data: dataDir, config: configDir, runtime: runtimeDir}, nil
}

// engineOptions resolves the engine's directories from the flag and the
// environment, and builds the backends in order of preference.
func engineOptions(dataDirFlag string, logger *slog.Logger) (app.Options, error) {
	d, err := engineDirs(dataDirFlag)
	if err != nil {
		return app.Options{}, err
	}
	home, dataDir, euid := d.home, d.data, os.Geteuid()
	var sandboxUser *backends.Credential
	if euid == 0 {
		sandboxUser = &backends.Credential{UID: 65534, GID: 65534}
	}
	offered, err := offeredBackends(os.Getenv("SENCLAW_BACKENDS"), append(nativeBackends(home, logger),
		bwrap.New(bwrap.Options{Logger: logger, SandboxUser: sandboxUser, Launcher: selfPath(), IDMapDir: filepath.Join(dataDir, "idmap")}),
		landlock.New(landlock.Options{Logger: logger, SandboxUser: sandboxUser}),
		docker.New(docker.Options{
			Getenv:       os.Getenv,
			HomeDir:      home,
			DefaultImage: app.DefaultSettings().DefaultImage,
			PoolDir:      filepath.Join(dataDir, "docker-pool"),
			HardQuota:    true,
			Owner:        dockerOwner(dataDir),
			Logger:       logger,
		}),
		direct.New(direct.Options{Launcher: selfPath(), Reaper: selfPath()}),
	))
	if err != nil {
		return app.Options{}, err
	}
	return app.Options{
		DataDir:    dataDir,
		ConfigDir:  d.config,
		RuntimeDir: d.runtime,
		HomeDir:    home,
		Backends:   offered,
		Logger:     logger,
		EUID:       euid,
		Forwarder:  findForwarder(),
		Disks:      diskquota.NewImages(filepath.Join(dataDir, "disks"), logger),
		// Facilities shown with the capabilities that are not backends.
		Probes: []app.Prober{app.ProbeFunc(unixguard.Name, func(context.Context) backends.Capability { return unixguard.Probe() })},
	}, nil
}

// selfPath is this executable's real path ("" when unknown): it is also
// the envexec launcher (main handles envexec.Arg), the direct backend's
// subreaper (direct.ReaperArg) and the idmap launcher (idmap.Arg).
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
// and the Debian package put it), else on PATH. "" when there is none: the
// engine then refuses bwrap runs and runs that need network, and says how
// to build it.
func findForwarder() string {
	if self := selfPath(); self != "" {
		dir := filepath.Dir(self)
		for _, p := range []string{filepath.Join(dir, "senclaw-netfwd"), filepath.Join(dir, "..", "lib", "senclaw", "senclaw-netfwd")} {
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return filepath.Clean(p)
			}
		}
	}
	if p, err := exec.LookPath("senclaw-netfwd"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}

// dockerOwner labels this engine's containers so that engines of other
// users (or other data dirs) on the same daemon leave them alone.
func dockerOwner(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return fmt.Sprintf("uid%d-%x", os.Getuid(), sum[:6])
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
