package client

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
)

// Dirs are where a user's engine keeps its database and workspaces
// (Data), its token and settings (Config) and its socket, lock, info
// file and log (Runtime). The engine and its clients find them alike.
type Dirs struct {
	Home, Data, Config, Runtime string
}

// FindDirs resolves the engine's directories from the --data-dir flag
// (dataDir, "" when not given) and the environment: SENCLAW_DATA_DIR,
// XDG_DATA_HOME, XDG_CONFIG_HOME and XDG_RUNTIME_DIR, with the usual
// defaults under the home directory.
func FindDirs(dataDir string, getenv func(string) string) (Dirs, error) {
	home, _ := os.UserHomeDir()
	if dataDir == "" {
		dataDir = getenv("SENCLAW_DATA_DIR")
	}
	if dataDir == "" {
		switch {
		case getenv("XDG_DATA_HOME") != "":
			dataDir = filepath.Join(getenv("XDG_DATA_HOME"), "senclaw")
		case os.Geteuid() == 0:
			// A root engine runs sandboxed code as an unprivileged user,
			// which must be able to reach its workspace: /root is private.
			dataDir = "/var/lib/senclaw"
		case home != "":
			dataDir = filepath.Join(home, ".local", "share", "senclaw")
		default:
			return Dirs{}, errors.New("no data dir: set --data-dir or SENCLAW_DATA_DIR")
		}
	}
	configDir := getenv("XDG_CONFIG_HOME")
	if configDir == "" && home != "" {
		configDir = filepath.Join(home, ".config")
	}
	if configDir != "" {
		configDir = filepath.Join(configDir, "senclaw")
	}
	runtimeDir := getenv("XDG_RUNTIME_DIR")
	if runtimeDir == "" {
		runtimeDir = filepath.Join(os.TempDir(), "senclaw-"+strconv.Itoa(os.Getuid()))
	} else {
		runtimeDir = filepath.Join(runtimeDir, "senclaw")
	}
	return Dirs{Home: home, Data: dataDir, Config: configDir, Runtime: runtimeDir}, nil
}
