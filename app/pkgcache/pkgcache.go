// Package pkgcache keeps package managers' caches between runs, one set per project or sandbox.
//
// An agent's `pip install`, `npm ci`, `go build` or `cargo build` in the
// agent shell or a persistent sandbox starts from an empty cache when its
// home is new each time. Each project (the folder of the agent shell's
// project sandbox and of `run --here`) gets cache folders of its own in
// the engine's data dir, bound into its runs; a persistent sandbox keeps
// them at the usual places in its own workspace, where its disk quota
// counts them. No two projects or sandboxes share one: what one run puts
// in a cache (a poisoned wheel, a planted module) reaches only later runs
// of the same project or sandbox.
package pkgcache

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
)

// Tool is one package manager's cache: its folder's name, the variable
// that points the tool at it, and where the tool keeps it by default
// under HOME.
type Tool struct {
	Name, Env, Home string
}

// Tools are the caches kept, in a fixed order.
var Tools = []Tool{
	{"pip", "PIP_CACHE_DIR", ".cache/pip"},
	{"npm", "npm_config_cache", ".npm"},
	{"go-build", "GOCACHE", ".cache/go-build"},
	{"go-mod", "GOMODCACHE", "go/pkg/mod"},
	{"cargo", "CARGO_HOME", ".cargo"},
}

// Root is where a project's caches appear inside its sandbox: in the
// sandbox's private /tmp, so that nothing of them is made in the
// project itself (its HOME).
const Root = "/tmp/senclaw-cache"

// Env points each tool at its folder under root (Root, or a host folder
// for a backend that binds nothing).
func Env(root string) map[string]string {
	env := make(map[string]string, len(Tools))
	for _, t := range Tools {
		env[t.Env] = path.Join(root, t.Name)
	}
	return env
}

// HomeEnv points each tool at its usual place under home.
func HomeEnv(home string) map[string]string {
	env := make(map[string]string, len(Tools))
	for _, t := range Tools {
		env[t.Env] = path.Join(home, t.Home)
	}
	return env
}

// ProjectKey names a project's caches after its folder's canonical path.
func ProjectKey(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "project-" + hex.EncodeToString(sum[:8])
}

// SandboxKey names the caches of a sandbox whose workspace is its own.
func SandboxKey(id string) string { return "sandbox-" + id }
