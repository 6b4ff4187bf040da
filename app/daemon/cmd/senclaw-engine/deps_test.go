package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// heavyDeps are packages senclaw-engine must not link. The Docker
// backend's official client (github.com/moby/moby/client) is linked, and
// with it distribution/reference and go-digest, whose regular
// expressions are compiled at every start (about 0.7 ms; senclaw, the
// CLI, links none of the engine: app/cli's TestTheCLILinksNoEngine);
// nothing more of that kind may come with it: not the monolith the
// client replaced, not a tracer that exports (the client's otelhttp is a
// no-op without one), not gRPC.
var heavyDeps = []string{
	"github.com/docker/docker/",
	"github.com/docker/cli/",
	"go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/exporters/",
	"google.golang.org/grpc",
	"github.com/containerd/containerd",
}

func TestBinaryLinksNoHeavyDeps(t *testing.T) {
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
					t.Errorf("GOOS=%s: senclaw-engine links %s", goos, pkg)
				}
			}
		}
	}
}
