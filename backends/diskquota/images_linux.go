package diskquota

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Images makes, mounts and removes workspace images. Each lives in Dir as
// <the workspace's base name>.img; Dir must be the engine's own (a
// sandbox never sees it). It is safe for concurrent use.
type Images struct {
	dir string
	log *slog.Logger

	probeOnce sync.Once
	usable    bool
	why       string
	mkfs      string

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per workspace: one attach or detach at a time
}

// helperEnv is the whole environment of the tools Images runs: nothing
// of the engine's, nor of any run's.
var helperEnv = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}

// NewImages keeps images in dir (made 0700 on first use).
func NewImages(dir string, log *slog.Logger) *Images {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Images{dir: dir, log: log, locks: map[string]*sync.Mutex{}}
}

// Usable reports whether images can be made here, and if not, why.
func (im *Images) Usable() (bool, string) {
	im.probeOnce.Do(func() {
		im.usable, im.why = false, ""
		switch {
		case os.Geteuid() != 0:
			im.why = "the engine does not run as root, and only root may mount a filesystem image"
		case !ext4InKernel():
			im.why = "this kernel has no ext4"
		default:
			if _, err := os.Stat("/dev/loop-control"); err != nil {
				im.why = "there are no loop devices (/dev/loop-control: " + err.Error() + ")"
				return
			}
			for _, dir := range filepath.SplitList(strings.TrimPrefix(helperEnv[0], "PATH=")) {
				if p := filepath.Join(dir, "mkfs.ext4"); isExecutable(p) {
					im.mkfs = p
				}
				if im.mkfs != "" {
					break
				}
			}
			if im.mkfs == "" {
				im.why = "mkfs.ext4 is not installed (apt-get install e2fsprogs)"
				return
			}
			im.usable = true
		}
	})
	return im.usable, im.why
}

func ext4InKernel() bool {
	data, err := os.ReadFile("/proc/filesystems")
	return err == nil && strings.Contains(string(data), "\text4\n")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func (im *Images) lock(ws string) func() {
	im.mu.Lock()
	l := im.locks[ws]
	if l == nil {
		l = &sync.Mutex{}
		im.locks[ws] = l
	}
	im.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// path is ws's image.
func (im *Images) path(ws string) string { return filepath.Join(im.dir, filepath.Base(ws)+".img") }

// Attach gives the directory ws its image of sizeMB MiB, made on first
// use, and mounts it over ws, with ws's owner and mode at its root. What
// ws held is moved into the image first; when it does not fit, nothing
// changes and the error is ErrTooBig. An image ws has already is mounted
// again, grown first when sizeMB asks for more. A mounted one is left as
// it is. Attach returns the image's size in MiB.
func (im *Images) Attach(ws string, sizeMB int) (int, error) {
	if ok, why := im.Usable(); !ok {
		return 0, errors.New(why)
	}
	defer im.lock(ws)()
	img := im.path(ws)
	if Mounted(ws) {
		return im.grow(img, ws, sizeMB)
	}
	fi, err := os.Lstat(ws)
	if err != nil || !fi.IsDir() {
		return 0, fmt.Errorf("the workspace %s is not a directory", ws)
	}
	made := false
	if _, err := os.Stat(img); errors.Is(err, fs.ErrNotExist) {
		if err := im.make(img, sizeMB, fi); err != nil {
			return 0, err
		}
		made = true
	} else if err != nil {
		return 0, err
	}
	undo := func() {
		if made {
			_ = os.Remove(img)
		}
	}
	if !emptyDir(ws) {
		// Files written before the image existed (the file API, or a
		// workspace older than images) move into it.
		staging := img + ".mnt"
		if err := os.Mkdir(staging, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			undo()
			return 0, err
		}
		defer os.Remove(staging)
		if err := mountImage(img, staging); err != nil {
			undo()
			return 0, err
		}
		err := moveTree(ws, staging)
		if uerr := unmount(staging); err == nil {
			err = uerr
		}
		if err != nil {
			undo()
			return 0, err
		}
	}
	if err := mountImage(img, ws); err != nil {
		undo()
		return 0, err
	}
	if err := settleRoot(ws, fi); err != nil {
		_ = unmount(ws)
		undo()
		return 0, err
	}
	if made {
		im.log.Info("A workspace got its disk image.", "workspace", ws, "sizeMb", sizeMB)
		return sizeMB, nil
	}
	return im.grow(img, ws, sizeMB)
}

// make creates img: a sparse file of sizeMB MiB with an ext4 filesystem,
// one inode per BytesPerInode, no blocks reserved for root, no journal
// (a workspace is scratch space; the engine unmounts it when it stops),
// its root owned as ws is.
func (im *Images) make(img string, sizeMB int, ws fs.FileInfo) error {
	if err := os.MkdirAll(im.dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(img, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("creating the workspace image: %w", err)
	}
	err = f.Truncate(int64(sizeMB) << 20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(img)
		return fmt.Errorf("sizing the workspace image: %w", err)
	}
	uid, gid := ownerOf(ws)
	cmd := exec.Command(im.mkfs, "-q", "-F", "-t", "ext4", "-m", "0", "-i", strconv.Itoa(BytesPerInode),
		"-O", "^has_journal", "-E", fmt.Sprintf("root_owner=%d:%d,lazy_itable_init=1,nodiscard", uid, gid), img)
	cmd.Env = helperEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(img)
		return fmt.Errorf("making the workspace's filesystem (mkfs.ext4): %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// grow makes the mounted image of ws sizeMB MiB when that is more than it
// has (online: the file grows, the loop device learns it, ext4 resizes),
// and returns its size. A smaller quota keeps the image as it is.
func (im *Images) grow(img, ws string, sizeMB int) (int, error) {
	fi, err := os.Stat(img)
	if err != nil {
		return 0, err
	}
	have := int(fi.Size() >> 20)
	if sizeMB <= have {
		return have, nil
	}
	dev := loopOf(img)
	if dev == "" {
		return have, nil
	}
	if err := os.Truncate(img, int64(sizeMB)<<20); err != nil {
		return have, err
	}
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return have, err
	}
	_, err = unix.IoctlRetInt(fd, unix.LOOP_SET_CAPACITY)
	unix.Close(fd)
	if err != nil {
		return have, fmt.Errorf("growing the workspace image: %w", err)
	}
	resize := filepath.Join(filepath.Dir(im.mkfs), "resize2fs")
	cmd := exec.Command(resize, dev)
	cmd.Env = helperEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		return have, fmt.Errorf("growing the workspace's filesystem (resize2fs): %v: %s", err, strings.TrimSpace(string(out)))
	}
	im.log.Info("A workspace image grew.", "workspace", ws, "fromMb", have, "toMb", sizeMB)
	return sizeMB, nil
}

// settleRoot gives the image's root ws's mode and owner (an image made
// earlier may have another) and removes mkfs's lost+found, which the
// workspace does not need.
func settleRoot(ws string, was fs.FileInfo) error {
	uid, gid := ownerOf(was)
	if err := os.Lchown(ws, uid, gid); err != nil {
		return err
	}
	if err := os.Chmod(ws, was.Mode().Perm()); err != nil {
		return err
	}
	lf := filepath.Join(ws, "lost+found")
	if fi, err := os.Lstat(lf); err == nil && fi.IsDir() {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 {
			_ = os.Remove(lf)
		}
	}
	return nil
}

func ownerOf(fi fs.FileInfo) (int, int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return 0, 0
}

func emptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

// Detach unmounts ws's image (it stays, for the next Attach).
func (im *Images) Detach(ws string) error {
	defer im.lock(ws)()
	return unmountAll(ws)
}

// Remove unmounts ws's image and deletes it. keep moves the files it
// held into ws first (a sandbox deleted without its files).
func (im *Images) Remove(ws string, keep bool) error {
	defer im.lock(ws)()
	img := im.path(ws)
	if keep && Mounted(ws) && hasImage(img) {
		staging := img + ".mnt"
		if err := os.Mkdir(staging, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		defer os.Remove(staging)
		if err := unix.Mount(ws, staging, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("keeping the workspace's files: %w", err)
		}
		err := unmountAll(ws)
		if err == nil {
			err = moveTree(staging, ws)
		}
		if uerr := unmount(staging); err == nil {
			err = uerr
		}
		if err != nil {
			return fmt.Errorf("keeping the workspace's files: %w", err)
		}
	}
	if err := unmountAll(ws); err != nil {
		return err
	}
	if err := os.Remove(img); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func hasImage(img string) bool {
	_, err := os.Stat(img)
	return err == nil
}

// Reconcile runs at engine start: every image of a workspace for which
// known is true is mounted again (or kept, when a crashed engine left it
// mounted); the images and mounts of every other workspace (a sandbox
// deleted meanwhile, a one-shot run the crash cut short) are removed,
// and the directory left empty under such a mount too. roots are the
// directories whose children are workspaces (workspaces/, the Docker
// pool's), where mounts of images are looked for.
func (im *Images) Reconcile(roots []string, known func(ws string) bool) error {
	var errs []error
	wanted := map[string]string{} // image -> workspace
	for _, root := range roots {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			ws := filepath.Join(root, e.Name())
			if e.IsDir() && known(ws) {
				wanted[im.path(ws)] = ws
			}
		}
	}
	for _, m := range mountPoints() {
		// A one-shot run's tmpfs a crash left: its files are gone with
		// the run, its mount goes too.
		if _, inRoot := underRoot(m.point, roots); inRoot && m.fstype == "tmpfs" && !known(m.point) {
			im.log.Info("Unmounting a one-shot workspace a stopped engine left.", "mount", m.point)
			if err := unmountAll(m.point); err != nil {
				errs = append(errs, err)
			} else if emptyDir(m.point) {
				_ = os.Remove(m.point)
			}
		}
	}
	for _, m := range imageMounts(im.dir) {
		if ws, ok := wanted[m.image]; ok && ws == m.point {
			continue
		}
		im.log.Info("Unmounting a workspace image no sandbox owns.", "mount", m.point)
		if err := unmountAll(m.point); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, inRoot := underRoot(m.point, roots); inRoot && emptyDir(m.point) {
			_ = os.Remove(m.point)
		}
	}
	entries, _ := os.ReadDir(im.dir)
	for _, e := range entries {
		img := filepath.Join(im.dir, e.Name())
		switch {
		case strings.HasSuffix(e.Name(), ".img.mnt"):
			_ = unmountAll(img)
			_ = os.Remove(img)
		case !strings.HasSuffix(e.Name(), ".img"):
		case wanted[img] != "":
			fi, err := os.Stat(img)
			if err == nil {
				_, err = im.Attach(wanted[img], int(fi.Size()>>20))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("mounting the image of %s again: %w", wanted[img], err))
			}
		default:
			im.log.Info("Removing a workspace image no sandbox owns.", "image", img)
			errs = append(errs, os.Remove(img))
		}
	}
	return errors.Join(errs...)
}

func underRoot(p string, roots []string) (string, bool) {
	for _, r := range roots {
		if filepath.Dir(p) == r {
			return r, true
		}
	}
	return "", false
}

// DetachAll unmounts every image mounted from Dir (the engine stops).
func (im *Images) DetachAll() error {
	var errs []error
	for _, m := range imageMounts(im.dir) {
		errs = append(errs, im.Detach(m.point))
	}
	return errors.Join(errs...)
}

// mountImage mounts img at dir through a loop device: the one already
// attached to img when there is one (a container may still hold the
// filesystem mounted after the engine unmounted it; a second device on
// the same file would be a second, diverging filesystem), else a free
// one, which detaches by itself at the last unmount.
func mountImage(img, dir string) error {
	if dev := loopOf(img); dev != "" {
		if err := unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOATIME, ""); err != nil {
			return fmt.Errorf("mounting the workspace image %s at %s: %w", img, dir, err)
		}
		return nil
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var dev string
		var fd int
		if dev, fd, err = attachLoop(img); err != nil {
			return err
		}
		// Autoclear detaches the device at its last close as well as at
		// its last unmount: it stays open until it is mounted.
		err = unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOATIME, "")
		unix.Close(fd)
		// A device another process's autoclear was still tearing down
		// when it was handed out loses its file under the mount (EIO,
		// seen under load): a fresh one is taken.
		if !errors.Is(err, unix.EIO) && !errors.Is(err, unix.ENXIO) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("mounting the workspace image %s at %s: %w", img, dir, err)
	}
	return nil
}

// attachLoop puts img on a free loop device, with autoclear, and returns
// the device open.
func attachLoop(img string) (string, int, error) {
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, fmt.Errorf("opening /dev/loop-control: %w", err)
	}
	defer unix.Close(ctl)
	file, err := unix.Open(img, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, err
	}
	defer unix.Close(file)
	for attempt := 0; attempt < 20; attempt++ {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", -1, fmt.Errorf("finding a free loop device: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", -1, fmt.Errorf("opening %s: %w", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(file)}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:], img)
		err = unix.IoctlLoopConfigure(fd, &cfg)
		if errors.Is(err, unix.EBUSY) {
			unix.Close(fd)
			continue // another process took it first
		}
		if err != nil {
			unix.Close(fd)
			return "", -1, fmt.Errorf("attaching the workspace image to %s: %w", dev, err)
		}
		return dev, fd, nil
	}
	return "", -1, errors.New("no free loop device after 20 tries")
}

// loopOf is the loop device img is attached to, or "".
func loopOf(img string) string {
	want, err := os.Stat(img)
	if err != nil {
		return ""
	}
	devs, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, bf := range devs {
		data, err := os.ReadFile(bf)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(strings.TrimSpace(string(data))); err == nil && os.SameFile(fi, want) {
			return "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(bf)))
		}
	}
	return ""
}

func unmount(dir string) error {
	err := unix.Unmount(dir, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting %s: %w", dir, err)
	}
	return nil
}

// unmountAll unmounts everything mounted at dir (an image, a bind of
// one over it).
func unmountAll(dir string) error {
	for i := 0; i < 8 && Mounted(dir); i++ {
		if err := unmount(dir); err != nil {
			return err
		}
	}
	return nil
}

// Mounted reports whether something is mounted at dir. It is asked at
// the end of every run (Unmount asks until nothing is left), so it reads
// the mount table with a pooled buffer and compares each line's mount
// point in place, making no string of it.
func Mounted(dir string) bool {
	found := false
	scanMountinfo(func(line []byte) bool {
		pre, _, ok := bytes.Cut(line, []byte(" - "))
		if !ok {
			return true
		}
		// The fifth field is the mount point.
		for range 4 {
			if _, pre, ok = bytes.Cut(pre, []byte(" ")); !ok {
				return true
			}
		}
		point, _, _ := bytes.Cut(pre, []byte(" "))
		if bytes.IndexByte(point, '\\') >= 0 {
			found = unescapeMount(string(point)) == dir
		} else {
			found = string(point) == dir
		}
		return !found
	})
	return found
}

// mountinfoBufs are the buffers the mount table is read with: 16 KiB,
// a hundred mounts a read (a longer table takes more reads, a longer
// line a larger buffer). The garbage collector empties the pool now and
// then, and every run's end refills it: 64 KiB each time was 2 KB a run.
var mountinfoBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// scanMountinfo calls line with each line of this process's mount table
// until it returns false; the line is valid only during the call.
func scanMountinfo(line func([]byte) bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	buf := mountinfoBufs.Get().(*[]byte)
	defer mountinfoBufs.Put(buf)
	sc := bufio.NewScanner(f)
	sc.Buffer(*buf, 1<<20)
	for sc.Scan() && line(sc.Bytes()) {
	}
}

type mountPoint struct {
	point, fstype, source string
	image                 string // the backing file of a loop device source
}

// mountPoints reads this process's mount table.
func mountPoints() []mountPoint {
	var out []mountPoint
	scanMountinfo(func(line []byte) bool {
		pre, post, ok := strings.Cut(string(line), " - ")
		a, b := strings.Fields(pre), strings.Fields(post)
		if ok && len(a) >= 5 && len(b) >= 2 {
			out = append(out, mountPoint{point: unescapeMount(a[4]), fstype: b[0], source: b[1]})
		}
		return true
	})
	return out
}

// imageMounts are the mounts whose source is a loop device backed by an
// image in dir.
func imageMounts(dir string) []mountPoint {
	var out []mountPoint
	for _, m := range mountPoints() {
		if !strings.HasPrefix(m.source, "/dev/loop") {
			continue
		}
		data, err := os.ReadFile("/sys/block/" + filepath.Base(m.source) + "/loop/backing_file")
		if err != nil {
			continue
		}
		if img := strings.TrimSpace(string(data)); filepath.Dir(img) == dir {
			m.image = img
			out = append(out, m)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
