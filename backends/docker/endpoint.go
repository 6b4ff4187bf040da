package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// endpoint is where the daemon is and how to talk to it, found the way the
// docker CLI finds it: an explicit host, DOCKER_HOST, DOCKER_CONTEXT, the
// config's currentContext, or the default socket.
type endpoint struct {
	Host string
	// Source says where Host came from, for people ("DOCKER_HOST",
	// "context desktop-linux", "default").
	Source string
	// Configured is true when someone pointed us at this daemon (a
	// variable, a context), so silence means "not answering", not "absent".
	Configured bool
	// TLS files (all empty without TLS).
	CACert, Cert, Key string
	// APIVersion pins the API version (DOCKER_API_VERSION); empty
	// negotiates it.
	APIVersion string
	// remote is true for a daemon on another machine: a named engine,
	// or a tcp:// daemon that is not on this machine's loopback.
	remote bool
}

// contextMeta is the part of the context store's meta.json we use.
type contextMeta struct {
	Name      string `json:"Name"`
	Endpoints map[string]struct {
		Host          string `json:"Host"`
		SkipTLSVerify bool   `json:"SkipTLSVerify"`
	} `json:"Endpoints"`
}

// resolveEndpoint finds the daemon from opts. It reads the docker config
// and context store but never the process environment.
func resolveEndpoint(opts Options) (endpoint, error) {
	if opts.Remote != nil {
		return remoteEndpoint(opts)
	}
	env := opts.Getenv
	ep := endpoint{APIVersion: env("DOCKER_API_VERSION")}
	switch {
	case opts.Host != "":
		ep.Host, ep.Source, ep.Configured = opts.Host, "the engine's settings", true
	case env("DOCKER_HOST") != "":
		ep.Host, ep.Source, ep.Configured = env("DOCKER_HOST"), "DOCKER_HOST", true
		if dir := env("DOCKER_CERT_PATH"); dir != "" && env("DOCKER_TLS_VERIFY") != "" {
			ep.CACert = filepath.Join(dir, "ca.pem")
			ep.Cert = filepath.Join(dir, "cert.pem")
			ep.Key = filepath.Join(dir, "key.pem")
		}
	default:
		configDir := env("DOCKER_CONFIG")
		if configDir == "" && opts.HomeDir != "" {
			configDir = filepath.Join(opts.HomeDir, ".docker")
		}
		name := env("DOCKER_CONTEXT")
		if name == "" && configDir != "" {
			var err error
			if name, err = currentContext(configDir); err != nil {
				return ep, err
			}
		}
		if name != "" && name != "default" {
			if err := fromContext(&ep, configDir, name); err != nil {
				return ep, err
			}
		} else {
			ep.Host, ep.Source = defaultHost, "the default socket"
		}
	}
	return ep, checkHost(ep)
}

// checkHost refuses what SenClaw does not speak: ssh, and a daemon over
// TCP whose certificate nothing verifies.
func checkHost(ep endpoint) error {
	u, err := url.Parse(ep.Host)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("the docker host %q (from %s) is not a URL such as unix:///var/run/docker.sock or tcp://127.0.0.1:2376", ep.Host, ep.Source)
	}
	switch u.Scheme {
	case "ssh":
		return fmt.Errorf("the docker host %q (from %s) uses ssh, which SenClaw does not support yet: forward the remote socket (ssh -NL /tmp/remote-docker.sock:/var/run/docker.sock HOST) and use unix:///tmp/remote-docker.sock, or give the engine tcp:// with TLS", ep.Host, ep.Source)
	case "tcp":
		if ep.CACert == "" && (ep.remote || !loopbackHost(u.Hostname())) {
			return fmt.Errorf("the docker host %q (from %s) is reached over TCP without TLS, which SenClaw refuses: the Docker API gives root on that machine to whoever reaches it, and nothing would tell the daemon from another; give the engine a CA certificate and a client certificate and key (the daemon's --tlsverify)", ep.Host, ep.Source)
		}
	}
	return nil
}

// remoteEndpoint is a named engine's endpoint: its Docker context's, or
// its host with its TLS files.
func remoteEndpoint(opts Options) (endpoint, error) {
	r := opts.Remote
	ep := endpoint{remote: true, Configured: true}
	if r.Context != "" {
		configDir := opts.Getenv("DOCKER_CONFIG")
		if configDir == "" && opts.HomeDir != "" {
			configDir = filepath.Join(opts.HomeDir, ".docker")
		}
		if err := fromContext(&ep, configDir, r.Context); err != nil {
			return ep, err
		}
		ep.Source = "engine " + r.Name + " (context " + r.Context + ")"
		return ep, checkHost(ep)
	}
	ep.Host, ep.Source = r.Host, "engine "+r.Name
	ep.CACert, ep.Cert, ep.Key = r.CACert, r.Cert, r.Key
	if (ep.Cert == "") != (ep.Key == "") {
		return ep, fmt.Errorf("engine %s gives a client certificate without its key, or a key without its certificate; give both, or neither", r.Name)
	}
	return ep, checkHost(ep)
}

// currentContext reads currentContext from config.json; a missing file
// means the default context.
func currentContext(configDir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(configDir, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the docker config: %w", err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("reading %s: %w; fix or remove the file", filepath.Join(configDir, "config.json"), err)
	}
	return cfg.CurrentContext, nil
}

// fromContext fills ep from the context store, where each context lives
// under the hex SHA-256 of its name.
func fromContext(ep *endpoint, configDir, name string) error {
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	metaPath := filepath.Join(configDir, "contexts", "meta", id, "meta.json")
	data, err := os.ReadFile(metaPath)
	if err != nil {
		return fmt.Errorf("the docker context %q is selected but its metadata could not be read (%w); run `docker context use default` or recreate the context", name, err)
	}
	var meta contextMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("reading the docker context %q (%s): %w", name, metaPath, err)
	}
	d, ok := meta.Endpoints["docker"]
	if !ok || d.Host == "" {
		return fmt.Errorf("the docker context %q has no docker endpoint; run `docker context inspect %s`", name, name)
	}
	if d.SkipTLSVerify {
		return fmt.Errorf("the docker context %q skips TLS verification, which SenClaw refuses; give the context a CA certificate", name)
	}
	ep.Host, ep.Source, ep.Configured = d.Host, "context "+name, true
	tlsDir := filepath.Join(configDir, "contexts", "tls", id, "docker")
	if _, err := os.Stat(filepath.Join(tlsDir, "ca.pem")); err == nil {
		ep.CACert = filepath.Join(tlsDir, "ca.pem")
		ep.Cert = filepath.Join(tlsDir, "cert.pem")
		ep.Key = filepath.Join(tlsDir, "key.pem")
	}
	return nil
}

// socketPath is the file of a unix:// host, or "".
func (ep endpoint) socketPath() string {
	if rest, ok := strings.CutPrefix(ep.Host, "unix://"); ok {
		return rest
	}
	return ""
}

// local reports whether the daemon runs on this machine's kernel as far as
// the address tells; process checks confirm it (see hostpids.go).
func (ep endpoint) local() bool { return ep.socketPath() != "" && !ep.remote }

// elsewhere reports whether the daemon's disk is not this machine's: a
// named engine, or a tcp:// host that is not a loopback address. Nothing
// of this machine is bound into its containers.
func (ep endpoint) elsewhere() bool {
	if ep.remote {
		return true
	}
	u, err := url.Parse(ep.Host)
	return err == nil && u.Scheme == "tcp" && !loopbackHost(u.Hostname())
}

// loopbackHost reports whether a host name is this machine's loopback.
func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
