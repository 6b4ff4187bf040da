package backends

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Memfd returns a close-on-exec memfd named name holding data, positioned
// at its start: how a backend hands a host-side helper what must not be
// on its command line or in its environment (bwrap's options, a seccomp
// program, a command's environment).
func Memfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
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
