package jailfs

import (
	"errors"
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/backends"
)

// As runs fn with the filesystem credentials of cred: fsuid and fsgid
// cred's, no supplementary groups, no effective capabilities. With a nil
// cred fn runs as it is.
//
// Only the calling thread's credentials can change without touching the
// engine's other threads: setfsuid, setfsgid, setgroups and capset are
// per thread as system calls (glibc and Go's syscall package make some of
// them process-wide, so the raw ones of x/sys are used). The calling
// goroutine is locked to its thread while fn runs; afterwards the thread
// gets its own credentials back, is checked, and only then is unlocked.
// The thread is never left to end with a goroutine: a thread that ends
// kills, by their death signal, the children it forked for other
// goroutines earlier (bwrap, strace), and Go reuses threads between
// goroutines.
//
// If the credentials cannot be restored (which no kernel does), the thread
// stays locked to the calling goroutine, with fewer rights than before,
// and ends with it. fn must not start goroutines for file work: they
// would run with the engine's credentials.
func As(cred *backends.Credential, fn func() error) (err error) {
	if cred == nil {
		return fn()
	}
	if cred.UID == 0 || cred.GID == 0 {
		return fmt.Errorf("refusing to act for a sandbox as root")
	}
	runtime.LockOSThread()
	orig, err := threadCreds()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	// Deferred, so that a panic in fn restores the thread too.
	defer func() {
		if rerr := orig.restore(); rerr != nil {
			// The thread stays locked to this goroutine: no other goroutine
			// ever runs with what it has now; it ends when this one does.
			err = errors.Join(err, fmt.Errorf("restoring a thread's credentials: %w", rerr))
			return
		}
		runtime.UnlockOSThread()
	}()
	if err := orig.become(cred); err != nil {
		return err
	}
	return fn()
}

// creds are a thread's filesystem credentials.
type creds struct {
	fsuid, fsgid int
	groups       []int
	caps         [2]unix.CapUserData
}

var capHeader = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}

func threadCreds() (*creds, error) {
	c := &creds{}
	// An invalid id changes nothing and returns the current one.
	c.fsuid, _ = unix.SetfsuidRetUid(-1)
	c.fsgid, _ = unix.SetfsgidRetGid(-1)
	var err error
	if c.groups, err = unix.Getgroups(); err != nil {
		return nil, err
	}
	hdr := capHeader
	if err := unix.Capget(&hdr, &c.caps[0]); err != nil {
		return nil, err
	}
	return c, nil
}

// become gives the thread cred's filesystem identity and clears its
// effective capabilities (fsuid 0 to another clears the file ones
// already; quota and reserved-space overrides go too).
func (c *creds) become(cred *backends.Credential) error {
	if err := unix.Setgroups(nil); err != nil {
		return fmt.Errorf("clearing the thread's groups: %w", err)
	}
	_, _ = unix.SetfsgidRetGid(int(cred.GID))
	_, _ = unix.SetfsuidRetUid(int(cred.UID))
	caps := c.caps
	caps[0].Effective, caps[1].Effective = 0, 0
	hdr := capHeader
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("dropping the thread's capabilities: %w", err)
	}
	now, err := threadCreds()
	if err != nil {
		return err
	}
	if now.fsuid != int(cred.UID) || now.fsgid != int(cred.GID) || len(now.groups) != 0 || now.caps[0].Effective != 0 || now.caps[1].Effective != 0 {
		return fmt.Errorf("the thread did not become %d:%d (fsuid %d, fsgid %d, groups %v)", cred.UID, cred.GID, now.fsuid, now.fsgid, now.groups)
	}
	return nil
}

// restore gives the thread c back, and checks it.
func (c *creds) restore() error {
	hdr := capHeader
	caps := c.caps
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return err
	}
	_, _ = unix.SetfsuidRetUid(c.fsuid)
	_, _ = unix.SetfsgidRetGid(c.fsgid)
	if err := unix.Setgroups(c.groups); err != nil {
		return err
	}
	now, err := threadCreds()
	if err != nil {
		return err
	}
	if now.fsuid != c.fsuid || now.fsgid != c.fsgid || !slices.Equal(now.groups, c.groups) || now.caps != c.caps {
		return fmt.Errorf("the thread is fsuid %d fsgid %d groups %v, not %d %d %v", now.fsuid, now.fsgid, now.groups, c.fsuid, c.fsgid, c.groups)
	}
	return nil
}

// CanWrite says whether cred may make and remove entries in the directory
// path (write and search permission, as the kernel decides for it: mode
// bits, ACLs, a read-only file system): nil when it may, else the
// kernel's answer (EACCES, EROFS, ...).
func CanWrite(cred *backends.Credential, path string) error {
	var access error
	err := As(cred, func() error {
		access = unix.Faccessat2(unix.AT_FDCWD, path, unix.W_OK|unix.X_OK, unix.AT_EACCESS)
		return nil
	})
	return errors.Join(err, access)
}

// CanReach says whether cred may walk into the directory path (search
// permission, the folders on its way included): nil when it may, else
// the kernel's answer (EACCES, ...).
func CanReach(cred *backends.Credential, path string) error {
	var access error
	err := As(cred, func() error {
		access = unix.Faccessat2(unix.AT_FDCWD, path, unix.X_OK, unix.AT_EACCESS)
		return nil
	})
	return errors.Join(err, access)
}

// Accessible returns the paths that cred may read or search (for a
// directory: list or walk into), as the kernel decides for it (mode
// bits, ACLs): what it may not is out of its reach without a mask. When
// it cannot ask as cred, it returns all of them, with the error.
func Accessible(cred *backends.Credential, paths []string) ([]string, error) {
	var out []string
	err := As(cred, func() error {
		for _, p := range paths {
			if unix.Faccessat2(unix.AT_FDCWD, p, unix.R_OK, unix.AT_EACCESS) == nil || unix.Faccessat2(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS) == nil {
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		return paths, err
	}
	return out, nil
}
