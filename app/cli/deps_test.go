package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/deptest"
)

// engineDeps are what the senclaw executable (main.go at the root)
// and this package must not link, each with why: every CLI process pays
// the package init of what it links, though it never uses it, and a
// hook runs one before each of an agent's commands. The commands that
// need the engine exec senclaw-engine instead.
var engineDeps = map[string]string{
	"github.com/senclaw/sandbox/app":           "the engine: the CLI reaches it through its API (app/client); its types are app/apitype's",
	"github.com/senclaw/sandbox/app/api":       "the API server: the CLI is a client of it",
	"github.com/senclaw/sandbox/app/daemon":    "hosting the engine is senclaw-engine's, which senclaw execs for serve and the desktop app",
	"github.com/senclaw/sandbox/app/mcp":       "the MCP server and the SDK's jsonschema-go init (about 1.1 ms): sandbox-server runs in senclaw-engine",
	"github.com/senclaw/sandbox/app/desktop":   "the tray (D-Bus) and the window (Wails): senclaw-engine's and senclaw-window's",
	"github.com/senclaw/sandbox/app/scheduler": "the engine's",
	"github.com/senclaw/sandbox/app/spaceapps": "the engine's",
	"github.com/senclaw/sandbox/app/doctor":    "the engine's (the CLI reads its report through the API)",
	"github.com/senclaw/sandbox/app/store":     "the engine's store, and bbolt with it",
	"github.com/senclaw/sandbox/monitor":       "process sampling, and gopsutil's init with it",
	"github.com/senclaw/sandbox/backends/":     "the backends are the engine's: only package backends' types cross the API",
	"github.com/senclaw/sandbox/frontend":      "the dashboard's files are the engine's to serve",
	"github.com/moby/moby/":                    "the Docker client: distribution/reference compiles its regular expressions at every start (about 1 ms)",
	"github.com/docker/":                       "Docker's packages are the Docker backend's",
	"github.com/distribution/reference":        "compiles its regular expressions at every start",
	"github.com/modelcontextprotocol/go-sdk/":  "the MCP SDK is sandbox-server's, in senclaw-engine",
	"github.com/google/jsonschema-go/":         "about 1.1 ms of init, for the MCP SDK",
	"github.com/getkin/kin-openapi/":           "the API's document is the server's",
	"go.etcd.io/bbolt":                         "the store is the engine's",
	"github.com/shirou/gopsutil/":              "process sampling is the engine's",
	"github.com/wailsapp/wails/":               "the window is senclaw-window's (cgo)",
	"fyne.io/systray":                          "the tray is senclaw-engine's",
	"github.com/godbus/dbus/":                  "D-Bus is the tray's and the notifications'",
	"github.com/russross/blackfriday/":         "the man pages' markdown (0.5 ms of init): scripts/gen-man writes them, not senclaw",
	"github.com/cpuguy83/go-md2man/":           "the man pages are scripts/gen-man's",
	"github.com/landlock-lsm/go-landlock/":     "Landlock is the engine's",
	"github.com/elastic/go-seccomp-bpf":        "seccomp is the engine's",
	"go.opentelemetry.io/":                     "the Docker client's tracing",
	"google.golang.org/grpc":                   "nothing of senclaw needs gRPC",
}

// TestTheCLILinksNoEngine checks senclaw and this package against
// engineDeps, for each system senclaw is built for.
func TestTheCLILinksNoEngine(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"github.com/senclaw/sandbox", "github.com/senclaw/sandbox/app/cli"} {
		deptest.Checker{Package: pkg, GOOS: []string{"linux", "darwin", "windows"}, BadDeps: engineDeps}.Check(t)
	}
}

// TestTheRootHoldsMainGoAlone: the repository's root is main.go and the
// folders (CONTRIBUTING.md's house): a command's flags and action go in
// app/cli, the engine's hosting in app/daemon, their tests beside them.
func TestTheRootHoldsMainGoAlone(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") && e.Name() != "main.go" {
			t.Errorf("%s is at the repository's root, where only main.go goes: move it to the package it belongs to (app/cli, app/daemon, ...)", e.Name())
		}
	}
}
