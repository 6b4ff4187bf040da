//go:build !linux

package direct

import (
	"os/exec"

	"github.com/senclaw/sandbox/backends"
)

// track: outside Linux a direct run is tracked by its process group.
func (b *Backend) track(*exec.Cmd, *backends.Spec) (tree, error) { return &groupTree{}, nil }
