//go:build unix

package rundir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Dir is a runtime dir that passed the check, held open by descriptor:
// every file in it is reached relative to that descriptor, so that the
// path cannot be swapped for another folder once it was checked.
type Dir struct {
	// Path is where the folder was found (for messages, and for the
	// socket's address that clients dial).
	Path string
	fd   int
	// owner is the uid the folder (and so its files) belongs to.
	owner int
}

// Open makes the runtime dir at path for the engine, exclusively and with
// mode 0700 (its parent as needed), or opens the one there if it is a
// folder of this process's effective uid that no one else may enter; any
// other is refused with an *UnsafeError, never repaired: a folder another
// user made first is theirs, whatever it holds.
func Open(path string) (*Dir, error) {
	euid := os.Geteuid()
	if parent := filepath.Dir(path); parent != path {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return nil, fmt.Errorf("making the runtime dir's parent: %w", err)
		}
	}
	err := unix.Mkdir(path, 0o700)
	created := err == nil
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("making the runtime dir %s: %w", path, err)
	}
	d, err := open(path, func(uid int) bool { return uid == euid }, euid)
	if err != nil {
		return nil, err
	}
	if created {
		// The umask may have taken bits the owner needs; the folder is
		// ours, and no one else's bits were ever set.
		if err := unix.Fchmod(d.fd, 0o700); err != nil {
			d.Close()
			return nil, fmt.Errorf("securing the runtime dir %s: %w", path, err)
		}
	}
	return d, nil
}

// Check opens the runtime dir at path for a client, without making it:
// it must be a folder of this process's effective uid (or root's, whose
// engine may serve it) that no one else may enter, else an *UnsafeError.
// A missing folder is an error satisfying errors.Is(err, fs.ErrNotExist).
func Check(path string) (*Dir, error) {
	euid := os.Geteuid()
	return open(path, func(uid int) bool { return uid == euid || uid == 0 }, euid)
}

func open(path string, trusted func(uid int) bool, want int) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			ue := &UnsafeError{Path: path, What: "runtime dir", Want: want, Link: errors.Is(err, unix.ELOOP), NotDir: true}
			var st unix.Stat_t
			if unix.Lstat(path, &st) == nil {
				ue.UID, ue.Mode = int(st.Uid), os.FileMode(st.Mode&0o7777)
				ue.Link = st.Mode&unix.S_IFMT == unix.S_IFLNK
			}
			return nil, ue
		}
		return nil, fmt.Errorf("opening the runtime dir %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("checking the runtime dir %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || !trusted(int(st.Uid)) || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return nil, &UnsafeError{Path: path, What: "runtime dir", UID: int(st.Uid), Mode: os.FileMode(st.Mode & 0o7777), Want: want,
			NotDir: st.Mode&unix.S_IFMT != unix.S_IFDIR}
	}
	return &Dir{Path: path, fd: fd, owner: int(st.Uid)}, nil
}

// Close gives the descriptor up.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// file opens name in the folder, following no link, and checks that it is
// a regular file of the folder's owner (or root) that no one else may
// write.
func (d *Dir) file(name string, flags int, what string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, &UnsafeError{Path: filepath.Join(d.Path, name), What: what, Link: true, Want: d.owner}
		}
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(d.Path, name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || (int(st.Uid) != d.owner && st.Uid != 0) || st.Mode&0o022 != 0 {
		unix.Close(fd)
		return nil, &UnsafeError{Path: filepath.Join(d.Path, name), What: what, UID: int(st.Uid), Mode: os.FileMode(st.Mode & 0o7777),
			NotDir: st.Mode&unix.S_IFMT != unix.S_IFREG, Want: d.owner}
	}
	// Back to blocking: O_NONBLOCK only kept a FIFO from holding the open.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.Path, name)), nil
}

// ReadFile reads name, at most max bytes (more is an error).
func (d *Dir) ReadFile(name string, max int64, what string) ([]byte, error) {
	f, err := d.file(name, unix.O_RDONLY, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", f.Name(), max)
	}
	return data, nil
}

// WriteFile replaces name with data (mode 0600): a new file made
// exclusively beside it, then renamed over it, both inside the folder.
func (d *Dir) WriteFile(name string, data []byte) error {
	tmp := "." + name + "." + randomSuffix()
	f, err := d.Create(tmp)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("writing %s: %w", filepath.Join(d.Path, name), werr)
	}
	return nil
}

// Create makes name exclusively (mode 0600), following no link.
func (d *Dir) Create(name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: filepath.Join(d.Path, name), Err: err}
	}
	if err := unix.Fchmod(fd, 0o600); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.Path, name)), nil
}

// AppendLog opens name for appending (made with mode 0600 when absent),
// following no link: the log of a daemon started in the background. It
// is open for reading too, so that its starter can say what a daemon
// that failed at once wrote there.
func (d *Dir) AppendLog(name string) (*os.File, error) {
	return d.file(name, unix.O_RDWR|unix.O_CREAT|unix.O_APPEND, "daemon's log")
}

// Rename renames old to name inside the folder, replacing what name was:
// how the daemon publishes its socket once info.json is written.
func (d *Dir) Rename(old, name string) error {
	if err := unix.Renameat(d.fd, old, d.fd, name); err != nil {
		return &fs.PathError{Op: "rename", Path: filepath.Join(d.Path, old), Err: err}
	}
	return nil
}

// Remove removes name from the folder; a name that is not there is no
// error.
func (d *Dir) Remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.Path, name), Err: err}
	}
	return nil
}

// Lock takes the per-user daemon lock, a flock on daemon.lock in the
// folder: the kernel releases it when the daemon dies, so a crash never
// leaves a stale lock. ErrLocked when another daemon holds it.
func (d *Dir) Lock() (release func(), err error) {
	f, err := d.file("daemon.lock", unix.O_RDWR|unix.O_CREAT, "daemon lock")
	if err != nil {
		return nil, fmt.Errorf("opening the daemon lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("taking the daemon lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// Held says whether a daemon holds the lock now: `senclaw stop` waits
// until its daemon has let go of it. The probe is a shared lock, given
// back at once, so it never looks like a daemon to another probe; a
// daemon starting at that instant meets it as a lock being released.
func (d *Dir) Held() bool {
	f, err := d.file("daemon.lock", unix.O_RDONLY, "daemon lock")
	if err != nil {
		return false // no lock file: no daemon ever ran here
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	return errors.Is(err, unix.EWOULDBLOCK)
}

// Listen binds the Unix socket name in the folder (a stale one there is
// removed first) with mode 0600, through the folder's descriptor where
// the system allows it (bindPath), and checks what was bound. The
// listener does not remove the socket when it closes: Remove does.
func (d *Dir) Listen(name string) (*net.UnixListener, error) {
	if err := d.Remove(name); err != nil {
		return nil, err
	}
	addr, err := d.bindPath(name)
	if err != nil {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", filepath.Join(d.Path, name), err)
	}
	l.SetUnlinkOnClose(false)
	fail := func(err error) (*net.UnixListener, error) {
		l.Close()
		_ = d.Remove(name)
		return nil, err
	}
	// The folder is ours and closed to others: nothing can stand between
	// the bind and the chmod.
	if err := unix.Fchmodat(d.fd, name, 0o600, 0); err != nil {
		return fail(fmt.Errorf("securing %s: %w", filepath.Join(d.Path, name), err))
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fail(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || int(st.Uid) != os.Geteuid() {
		return fail(fmt.Errorf("%s is not the socket just bound (mode %o, uid %d)", filepath.Join(d.Path, name), st.Mode, st.Uid))
	}
	return l, nil
}

// sameFolder reports whether path is the folder d holds.
func (d *Dir) sameFolder(path string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(d.fd, &a) == nil && unix.Stat(path, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
