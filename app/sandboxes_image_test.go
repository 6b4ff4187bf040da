package app

import (
	"context"
	"errors"
	"testing"
)

// TestAnImageAsksForAContainer: an image with a backend that runs the
// host's programs is refused naming the field, and an image with the
// default backend asks for docker rather than being ignored.
func TestAnImageAsksForAContainer(t *testing.T) {
	t.Parallel()
	e := directEngine(t)
	ctx := context.Background()
	_, err := e.Create(ctx, SandboxConfig{Backend: ptr("direct"), Image: ptr("python:3.12-slim")})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "image" {
		t.Fatalf("an image on the direct backend: %v", err)
	}
	sb, err := e.Create(ctx, SandboxConfig{Image: ptr("python:3.12-slim")})
	if err != nil || sb.Backend != "docker" {
		t.Fatalf("an image with the default backend: %+v %v", sb, err)
	}
	if sb, err := e.Create(ctx, SandboxConfig{}); err != nil || sb.Backend == "docker" {
		t.Fatalf("no image: %+v %v", sb, err)
	}
}
