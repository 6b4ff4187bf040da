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

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/diskquota"
	"github.com/senclaw/sandbox/backends/docker"
	"github.com/senclaw/sandbox/backends/landlock"
)

// engineOptions resolves the engine's directories from the flag and the
// environment, and builds the backends in order of preference.
func engineOptions(dataDirFlag string, logger *slog.Logger) (app.Options, error) {
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
			return app.Options{}, fmt.Errorf("no data dir: set --data-dir or SENCLAW_DATA_DIR")
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
	var sandboxUser *backends.Credential
	if euid == 0 {
		sandboxUser = &backends.Credential{UID: 65534, GID: 65534}
	}
	return app.Options{
		DataDir:    dataDir,
		ConfigDir:  configDir,
		RuntimeDir: runtimeDir,
		HomeDir:    home,
		Backends: []backends.Backend{
			bwrap.New(bwrap.Options{Logger: logger, SandboxUser: sandboxUser}),
			docker.New(docker.Options{
				Getenv:       os.Getenv,
				HomeDir:      home,
				DefaultImage: app.DefaultSettings().DefaultImage,
				PoolDir:      filepath.Join(dataDir, "docker-pool"),
				HardQuota:    true,
				Owner:        dockerOwner(dataDir),
				Logger:       logger,
			}),
			direct.New(direct.Options{Reaper: selfExecutable()}),
		},
		Probes:    []app.Prober{app.ProbeFunc(landlock.Name, func(context.Context) backends.Capability { return landlock.Probe() })},
		Logger:    logger,
		EUID:      euid,
		Forwarder: findForwarder(),
		Disks:     diskquota.NewImages(filepath.Join(dataDir, "disks"), logger),
	}, nil
}

// selfExecutable is this program's path, for helpers it starts as
// itself (the direct backend's subreaper); "" when it cannot be found.
func selfExecutable() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		return real
	}
	return self
}

// findForwarder finds senclaw-netfwd, the in-sandbox network forwarder:
// next to this executable, else on PATH. "" when there is none: the
// engine then refuses runs that need network and says how to build it.
func findForwarder() string {
	if self := selfExecutable(); self != "" {
		p := filepath.Join(filepath.Dir(self), "senclaw-netfwd")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
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
