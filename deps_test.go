package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// heavyDeps are packages senclaw must not link: each CLI process pays
// their package init (regular expressions compiled at start, telemetry
// set up) though it never talks to Docker (issue #14). The Docker backend
// speaks the Engine API through backends/docker/engineapi instead.
var heavyDeps = []string{
	"github.com/docker/docker/",
	"github.com/distribution/reference",
	"github.com/opencontainers/go-digest",
	"go.opentelemetry.io/",
	"github.com/docker/go-connections/",
	"github.com/containerd/",
}

func TestBinaryLinksNoDockerSDK(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the go tool is not on PATH (CI=true)")
		}
		t.Skip("the go tool is not on PATH")
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command(goTool, "list", "-deps", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps . (GOOS=%s): %v", goos, err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			for _, bad := range heavyDeps {
				if strings.HasPrefix(pkg, bad) {
					t.Errorf("GOOS=%s: senclaw links %s", goos, pkg)
				}
			}
		}
	}
}
