package tracer

import (
	"os"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/envexec"
)

// envMemfd returns a memfd holding env for the envexec launcher.
func envMemfd(env []string) (*os.File, error) {
	data, err := envexec.EnvData(env)
	if err != nil {
		return nil, err
	}
	return backends.Memfd("senclaw-env", data)
}
