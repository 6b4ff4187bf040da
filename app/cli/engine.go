package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/senclaw/sandbox/app/client"
)

// Hosting hosts the engine in this process, for the commands that need it
// there (serve, the desktop app, sandbox-server). The senclaw-engine
// executable gives Main one (app/daemon's); senclaw, which must start in
// a millisecond, links none of it and execs senclaw-engine instead.
type Hosting interface {
	// Serve is `senclaw serve`.
	Serve(ctx context.Context, h Host, o ServeOptions) int
	// Desktop is `senclaw` with no command: the desktop app.
	Desktop(ctx context.Context, h Host) int
	// SandboxServer is `senclaw sandbox-server`, MCP over stdio, over c
	// (redial reaches the daemon again when it restarted).
	SandboxServer(ctx context.Context, h Host, c *client.Client, redial func(context.Context) (*client.Client, error)) int
}

// Host is what a command that hosts the engine gets from the command
// line and the environment.
type Host struct {
	// DataDir is --data-dir ("" : from the environment).
	DataDir string
	// LookupEnv reads the environment (os.LookupEnv).
	LookupEnv func(key string) (string, bool)
	Logger    *slog.Logger
	Stdout    io.Writer
	Stderr    io.Writer
	// CLI is the senclaw executable, which the login autostart entry
	// starts.
	CLI string
}

// Getenv is the environment variable key, "" when unset.
func (h Host) Getenv(key string) string {
	v, _ := h.LookupEnv(key)
	return v
}

// ServeOptions are the flags of `senclaw serve`.
type ServeOptions struct {
	Listen string
	// LAN is --lan, the LAN listener's IP:PORT ("" : the lanListen
	// setting's, else none); TLSCert and TLSKey its certificate.
	LAN, TLSCert, TLSKey string
	// ListenGiven: --listen or SENCLAW_LISTEN was given; without either
	// a default port taken by another program of this user falls back to
	// any free one (never one another user holds: that is refused).
	ListenGiven bool
}

// host is the Host of this invocation.
func (x *invocation) host() Host {
	return Host{DataDir: x.dataDir, LookupEnv: x.env.LookupEnv, Logger: x.logger, Stdout: x.io.Out, Stderr: x.io.Err, CLI: x.cliPath()}
}

// hostEngine runs the command name that hosts the engine: in this process
// when it has the engine; else by exec'ing senclaw-engine with the same
// arguments as this very process (same pid, so a service manager, its
// notify socket and signals see no difference).
func (x *invocation) hostEngine(name string, run func(Hosting) int) int {
	if x.env.Hosting != nil {
		return run(x.env.Hosting)
	}
	engine, err := x.enginePath()
	if err != nil {
		fmt.Fprintf(x.io.Err, "senclaw %s: %v\n", name, err)
		return ExitFailure
	}
	code, err := execEngine(engine, append([]string{x.cliPath()}, x.args...))
	if err != nil {
		fmt.Fprintf(x.io.Err, "senclaw %s: starting %s: %v\n", name, engine, err)
		return ExitFailure
	}
	return code
}

// enginePath is the senclaw-engine executable: this one, when it is; else
// next to senclaw (a clone's build), or in ../lib/senclaw beside it (make
// install, the Debian package). It is never looked up on PATH.
func (x *invocation) enginePath() (string, error) {
	if x.env.Hosting != nil {
		return selfPath(), nil
	}
	self := selfPath()
	if self == "" {
		return "", fmt.Errorf("cannot find this senclaw executable's path, and senclaw-engine beside it")
	}
	dir := filepath.Dir(self)
	tried := []string{filepath.Join(dir, "senclaw-engine"), filepath.Join(dir, "..", "lib", "senclaw", "senclaw-engine")}
	for _, p := range tried {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return filepath.Clean(p), nil
		}
	}
	return "", fmt.Errorf("senclaw-engine, which runs the engine, is missing: it is not in %s nor in %s; build it with make build (a clone), or reinstall senclaw",
		dir, filepath.Clean(filepath.Join(dir, "..", "lib", "senclaw")))
}

// cliPath is the senclaw executable's path: this one, or, in
// senclaw-engine, the one that exec'd it (its argv[0]) or the one next to
// it.
func (x *invocation) cliPath() string {
	self := selfPath()
	if x.env.Hosting == nil {
		return self
	}
	if filepath.IsAbs(x.env.Argv0) && filepath.Base(x.env.Argv0) == "senclaw" {
		return x.env.Argv0
	}
	dir := filepath.Dir(self)
	for _, p := range []string{filepath.Join(dir, "senclaw"), filepath.Join(dir, "..", "..", "bin", "senclaw")} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return filepath.Clean(p)
		}
	}
	return self
}

// selfPath is this executable's real path ("" when unknown).
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
