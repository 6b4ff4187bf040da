package tracer

import (
	"io"
	"os"

	"github.com/senclaw/sandbox/backends/envexec"
	"golang.org/x/sys/unix"
)

// envMemfd returns a memfd holding env for the envexec launcher,
// positioned at its start.
func envMemfd(env []string) (*os.File, error) {
	data, err := envexec.EnvData(env)
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("senclaw-env", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "senclaw-env")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
