package unixguard

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// places are the sandbox's own places, learnt at the handoff: the
// descriptor of its root, and the mounts whose sockets it may reach.
type places struct {
	root   int
	mounts []uint64
}

// inside is how the guard opens what the sandbox names: from the root,
// in its mount namespace, following no link at all.
const inside = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// findPlaces learns the places of the sandbox that pid (the carrier,
// before any sandboxed code ran) belongs to. The workspace and the
// plumbing directory must be there as what the engine bound, else the
// run is refused; the private /tmp counts only when it is one.
func findPlaces(pid int, pol Policy) (*places, error) {
	root, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox's root: %w", err)
	}
	return placesIn(root, pol)
}

// placesIn is findPlaces from the sandbox's root, which it takes.
func placesIn(root int, pol Policy) (*places, error) {
	pl := &places{root: root}
	// The workspace's own path may go through a link on the host (a
	// workspace that is not exact): the directory found must be the one
	// the engine bound, whatever the way to it.
	ws, err := pl.bound(pol.Workspace, pol.Workspace, unix.RESOLVE_IN_ROOT|unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		pl.close()
		return nil, fmt.Errorf("finding the workspace %s inside the sandbox: %w", pol.Workspace, err)
	}
	pl.mounts = append(pl.mounts, ws)
	if b := pol.Plumbing; b != nil {
		id, err := pl.bound(b.Inside, b.Host, inside)
		if err != nil {
			pl.close()
			return nil, fmt.Errorf("finding the network directory %s inside the sandbox: %w", b.Inside, err)
		}
		pl.mounts = append(pl.mounts, id)
	}
	if id, ok := pl.privateTmp(); ok {
		pl.mounts = append(pl.mounts, id)
	}
	return pl, nil
}

// rootOnly is the places of a sandbox in this machine's own mount
// namespace (Landlock): its root, and no mount that is its own.
func rootOnly(pid int, _ Policy) (*places, error) {
	root, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox's root: %w", err)
	}
	return &places{root: root}, nil
}

func (pl *places) close() { unix.Close(pl.root) }

// bound opens the directory at path inside and returns its mount's id if
// it is the root of a mount and the very directory host names.
func (pl *places) bound(path, host string, resolve uint64) (uint64, error) {
	fd, err := unix.Openat2(pl.root, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve})
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	sx, err := statx(fd)
	if err != nil {
		return 0, err
	}
	var hs unix.Stat_t
	if err := unix.Stat(host, &hs); err != nil {
		return 0, err
	}
	if unix.Mkdev(sx.Dev_major, sx.Dev_minor) != hs.Dev || sx.Ino != hs.Ino {
		return 0, errors.New("it is another directory than the one bound")
	}
	if sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return 0, errors.New("it is not a mount of its own")
	}
	return sx.Mnt_id, nil
}

// privateTmp returns the mount of the sandbox's /tmp if it is a tmpfs of
// its own, not the host's /tmp: only the sandbox can put sockets there.
func (pl *places) privateTmp() (uint64, bool) {
	fd, err := unix.Openat2(pl.root, "/tmp", &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: inside})
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	sx, err := statx(fd)
	var fs unix.Statfs_t
	if err != nil || sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 || unix.Fstatfs(fd, &fs) != nil || fs.Type != unix.TMPFS_MAGIC {
		return 0, false
	}
	dev := unix.Mkdev(sx.Dev_major, sx.Dev_minor)
	for _, host := range []string{"/tmp", "/"} {
		var hs unix.Stat_t
		if unix.Stat(host, &hs) != nil || hs.Dev == dev {
			return 0, false
		}
	}
	return sx.Mnt_id, true
}

// own reports whether the file fd lies in one of the sandbox's own places.
func (pl *places) own(fd int) bool {
	sx, err := statx(fd)
	return err == nil && slices.Contains(pl.mounts, sx.Mnt_id)
}

// statx describes fd, with its mount's id.
func statx(fd int) (*unix.Statx_t, error) {
	var sx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_INO|unix.STATX_MNT_ID, &sx); err != nil {
		return nil, err
	}
	if sx.Mask&unix.STATX_MNT_ID == 0 {
		return nil, errors.New("the kernel does not say which mount a file is on (statx STATX_MNT_ID, Linux 5.8)")
	}
	return &sx, nil
}
