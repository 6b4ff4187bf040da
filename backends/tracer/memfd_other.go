//go:build !linux

package tracer

import (
	"errors"
	"os"
)

// envMemfd needs Linux, as tracing does.
func envMemfd([]string) (*os.File, error) {
	return nil, errors.New("passing an environment by memfd needs Linux")
}
