package limits

import (
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// The control files of a run's cgroups and the /proc files it reads: a
// run opens a dozen and more, each used once and closed. os makes a File
// of each (and a FileInfo for os.ReadFile and os.Stat); these go straight
// to the system calls, retrying on EINTR as os does, with os's errors.

// openFile is os.OpenFile's open(2).
func openFile(name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Open(name, flags|unix.O_CLOEXEC, mode)
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR:
			continue
		}
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	}
}

// writeSmall is os.WriteFile(name, data, 0o644).
func writeSmall(name string, data []byte) error {
	fd, err := openFile(name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n, werr := unix.Write(fd, data)
		if werr == unix.EINTR {
			continue
		}
		if werr == nil && n <= 0 {
			werr = io.ErrShortWrite
		}
		if werr != nil {
			unix.Close(fd)
			return &fs.PathError{Op: "write", Path: name, Err: werr}
		}
		data = data[n:]
	}
	if err := unix.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: name, Err: err}
	}
	return nil
}

// readHead reads at most size bytes of the file name into a buffer of
// its own (no whole-file read and growth); whole says the file ended
// within them.
func readHead(name string, size int) (data []byte, whole bool, err error) {
	fd, err := openFile(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(fd)
	buf := make([]byte, size)
	for n := 0; n < size; {
		m, err := unix.Read(fd, buf[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, false, &fs.PathError{Op: "read", Path: name, Err: err}
		case m == 0:
			return buf[:n], true, nil
		}
		n += m
	}
	return buf, false, nil
}

// readSmall reads the file name, most often of at most size bytes:
// into a buffer of that size, the whole file only when it is larger.
func readSmall(name string, size int) ([]byte, error) {
	buf, whole, err := readHead(name, size)
	if err != nil || whole {
		return buf, err
	}
	return os.ReadFile(name)
}

// exists is os.Stat(name) == nil.
func exists(name string) bool {
	var st unix.Stat_t
	for {
		err := unix.Stat(name, &st)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
