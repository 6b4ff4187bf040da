package diskquota

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watchdog counts the workspaces that runs use, as they change. One
// inotify instance serves every workspace (the kernel allows few per
// user); runs of the same workspace share its count. It is safe for
// concurrent use.
type Watchdog struct {
	// Interval is how often written files and open unlinked files are
	// looked at again (default 250 ms). Creations and removals count at
	// once.
	Interval time.Duration

	once    sync.Once
	fd      int
	file    *os.File // fd, read through the runtime's poller, so Close ends the reader
	initErr error

	mu    sync.Mutex
	trees map[string]*tree
	byWd  map[int]*dirNode
}

// NewWatchdog returns a watchdog; its inotify instance is made on the
// first Watch.
func NewWatchdog() *Watchdog {
	return &Watchdog{Interval: 250 * time.Millisecond, fd: -1, trees: map[string]*tree{}, byWd: map[int]*dirNode{}}
}

// Watch is one run's view of its workspace's count.
type Watch struct {
	t       *tree
	bytes   int64
	files   int64
	pids    func() []int
	over    chan struct{}
	overMu  sync.Once
	reason  string
	stopped bool
}

// Exceeded is closed when the workspace passes the run's quota (or when
// the watchdog can no longer count it); Reason then says which.
func (w *Watch) Exceeded() <-chan struct{} { return w.over }

// Reason says why Exceeded was closed.
func (w *Watch) Reason() string {
	w.t.wd.mu.Lock()
	defer w.t.wd.mu.Unlock()
	return w.reason
}

// Usage is the workspace's count now: bytes (allocated) and files, open
// unlinked files included.
func (w *Watch) Usage() (bytes, files int64) {
	w.t.wd.mu.Lock()
	defer w.t.wd.mu.Unlock()
	return w.t.bytes + w.t.lostBytes, w.t.files + w.t.lostFiles
}

// tree is the count of one workspace.
type tree struct {
	wd   *Watchdog
	root *dirNode
	dev  uint64
	// inodes are the files and directories seen, by inode number (hard
	// links count once).
	inodes       map[uint64]*inode
	bytes, files int64
	// lostBytes and lostFiles are the open unlinked files of the runs'
	// processes, at the last look.
	lostBytes, lostFiles int64
	dirty                map[*dirNode]map[string]bool
	watches              map[*Watch]bool
	stop                 chan struct{}
	broken               string
}

type inode struct {
	blocks int64 // bytes allocated
	names  int
}

// dirNode is a watched directory.
type dirNode struct {
	t       *tree
	parent  *dirNode
	name    string
	wd      int
	entries map[string]uint64 // name -> inode
	subdirs map[string]*dirNode
}

func (n *dirNode) path() string {
	if n.parent == nil {
		return n.t.rootPath()
	}
	return filepath.Join(n.parent.path(), n.name)
}

func (t *tree) rootPath() string { return t.root.name }

// Watch starts counting ws for a run with the quota limitMB; pids lists
// the run's processes (for the files they hold open after unlinking
// them). Stop it when the run ends.
func (wd *Watchdog) Watch(ws string, limitMB int, pids func() []int) *Watch {
	wd.once.Do(wd.init)
	w := &Watch{bytes: int64(limitMB) << 20, files: Inodes(limitMB), pids: pids, over: make(chan struct{})}
	wd.mu.Lock()
	defer wd.mu.Unlock()
	t := wd.trees[ws]
	if t == nil {
		t = &tree{wd: wd, inodes: map[uint64]*inode{}, dirty: map[*dirNode]map[string]bool{}, watches: map[*Watch]bool{}, stop: make(chan struct{})}
		t.root = &dirNode{t: t, name: ws, entries: map[string]uint64{}, subdirs: map[string]*dirNode{}, wd: -1}
		if fi, err := os.Lstat(ws); err == nil {
			t.dev = uint64(fi.Sys().(*syscall.Stat_t).Dev)
		}
		wd.trees[ws] = t
		if wd.initErr != nil {
			t.broken = "the disk watchdog cannot watch the workspace: " + wd.initErr.Error()
		} else {
			wd.scan(t.root)
		}
		go wd.poll(t)
	}
	w.t = t
	t.watches[w] = true
	wd.check(t)
	return w
}

// Stop ends the run's watch; the last one of a workspace drops its count.
func (w *Watch) Stop() {
	wd := w.t.wd
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	t := w.t
	delete(t.watches, w)
	if len(t.watches) > 0 {
		return
	}
	close(t.stop)
	wd.forget(t.root)
	delete(wd.trees, t.root.name)
}

func (wd *Watchdog) init() {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		wd.initErr = fmt.Errorf("inotify: %w", err)
		return
	}
	wd.fd, wd.file = fd, os.NewFile(uintptr(fd), "inotify")
	go wd.read(wd.file) // its own copy: Close clears wd.file
}

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// scan watches dir and counts what it holds, subdirectories included.
// The watch comes first, so what is made while it reads arrives as
// events. Called with wd.mu held.
func (wd *Watchdog) scan(n *dirNode) {
	path := n.path()
	if wd.fd < 0 {
		return
	}
	w, err := unix.InotifyAddWatch(wd.fd, path, watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			n.t.broken = "the disk watchdog cannot watch more directories (fs.inotify.max_user_watches)"
		}
		return
	}
	n.wd = w
	wd.byWd[w] = n
	entries, err := os.ReadDir(path)
	if err != nil {
		return
	}
	for _, e := range entries {
		wd.add(n, e.Name())
	}
}

// add counts the entry name of n (lstat, never following a link).
func (wd *Watchdog) add(n *dirNode, name string) {
	t := n.t
	if _, seen := n.entries[name]; seen {
		wd.remove(n, name)
	}
	fi, err := os.Lstat(filepath.Join(n.path(), name))
	if err != nil {
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	n.entries[name] = st.Ino
	in := t.inodes[st.Ino]
	if in == nil {
		in = &inode{blocks: st.Blocks * 512}
		t.inodes[st.Ino] = in
		t.files++
		t.bytes += in.blocks
	}
	in.names++
	if fi.IsDir() && uint64(st.Dev) == t.dev {
		sub := &dirNode{t: t, parent: n, name: name, entries: map[string]uint64{}, subdirs: map[string]*dirNode{}, wd: -1}
		n.subdirs[name] = sub
		wd.scan(sub)
	}
}

// remove drops the entry name of n from the count (a directory with all
// it holds).
func (wd *Watchdog) remove(n *dirNode, name string) {
	t := n.t
	ino, ok := n.entries[name]
	if !ok {
		return
	}
	delete(n.entries, name)
	if sub := n.subdirs[name]; sub != nil {
		delete(n.subdirs, name)
		wd.forget(sub)
	}
	if d := t.dirty[n]; d != nil {
		delete(d, name)
	}
	if in := t.inodes[ino]; in != nil {
		if in.names--; in.names <= 0 {
			delete(t.inodes, ino)
			t.files--
			t.bytes -= in.blocks
		}
	}
}

// forget stops watching n and everything below it, and uncounts what
// they hold (but n itself, which its parent counts).
func (wd *Watchdog) forget(n *dirNode) {
	for name := range n.entries {
		wd.remove(n, name)
	}
	if n.wd >= 0 {
		delete(wd.byWd, n.wd)
		if wd.fd >= 0 {
			_, _ = unix.InotifyRmWatch(wd.fd, uint32(n.wd))
		}
		n.wd = -1
	}
}

// restat counts the blocks of a written file again.
func (wd *Watchdog) restat(n *dirNode, name string) {
	t := n.t
	ino, ok := n.entries[name]
	if !ok {
		return
	}
	fi, err := os.Lstat(filepath.Join(n.path(), name))
	if err != nil {
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Ino != ino {
		wd.add(n, name) // replaced under the same name
		return
	}
	if in := t.inodes[ino]; in != nil {
		t.bytes += st.Blocks*512 - in.blocks
		in.blocks = st.Blocks * 512
	}
}

// read applies inotify events as they come.
func (wd *Watchdog) read(f *os.File) {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil || n <= 0 {
			return
		}
		wd.mu.Lock()
		touched := map[*tree]bool{}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				for i, c := range raw {
					if c == 0 {
						raw = raw[:i]
						break
					}
				}
				name = string(raw)
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				for _, t := range wd.trees {
					wd.rescan(t)
					touched[t] = true
				}
				continue
			}
			node := wd.byWd[int(ev.Wd)]
			if node == nil {
				continue
			}
			touched[node.t] = true
			switch {
			case ev.Mask&unix.IN_IGNORED != 0:
				delete(wd.byWd, int(ev.Wd))
				node.wd = -1
			case ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
				wd.add(node, name)
			case ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
				wd.remove(node, name)
			case ev.Mask&(unix.IN_MODIFY|unix.IN_CLOSE_WRITE|unix.IN_ATTRIB) != 0 && name != "":
				d := node.t.dirty[node]
				if d == nil {
					d = map[string]bool{}
					node.t.dirty[node] = d
				}
				d[name] = true
			}
		}
		for t := range touched {
			wd.check(t)
		}
		wd.mu.Unlock()
	}
}

// rescan counts a workspace from scratch (events were lost).
func (wd *Watchdog) rescan(t *tree) {
	wd.forget(t.root)
	t.inodes, t.bytes, t.files = map[uint64]*inode{}, 0, 0
	t.dirty = map[*dirNode]map[string]bool{}
	wd.scan(t.root)
}

// poll looks at written files and open unlinked ones every Interval.
func (wd *Watchdog) poll(t *tree) {
	tick := time.NewTicker(wd.Interval)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		wd.mu.Lock()
		dirty := t.dirty
		t.dirty = map[*dirNode]map[string]bool{}
		for n, names := range dirty {
			for name := range names {
				wd.restat(n, name)
			}
		}
		var pidFuncs []func() []int
		for w := range t.watches {
			pidFuncs = append(pidFuncs, w.pids)
		}
		known := t.inodes
		dev := t.dev
		wd.mu.Unlock()
		lostBytes, lostFiles := unlinkedOpen(pidFuncs, dev, known, &wd.mu)
		wd.mu.Lock()
		t.lostBytes, t.lostFiles = lostBytes, lostFiles
		wd.check(t)
		wd.mu.Unlock()
	}
}

// check tells the runs whose quota the workspace passed. Called with
// wd.mu held.
func (wd *Watchdog) check(t *tree) {
	bytes, files := t.bytes+t.lostBytes, t.files+t.lostFiles
	for w := range t.watches {
		reason := ""
		switch {
		case t.broken != "":
			reason = t.broken
		case bytes > w.bytes:
			reason = fmt.Sprintf("the workspace holds %d MB, more than its %d MB disk quota", bytes>>20, w.bytes>>20)
		case files > w.files:
			reason = fmt.Sprintf("the workspace holds %d files, more than the %d its %d MB disk quota allows", files, w.files, w.bytes>>20)
		}
		if reason != "" {
			w.overMu.Do(func() {
				w.reason = reason
				close(w.over)
			})
		}
	}
}

// unlinkedOpen sums the files on device dev that the processes hold
// open after unlinking them (their blocks stay taken until closed),
// each once, and none the tree counts already.
func unlinkedOpen(pidFuncs []func() []int, dev uint64, known map[uint64]*inode, mu *sync.Mutex) (bytes, files int64) {
	seen := map[uint64]bool{}
	for _, pids := range pidFuncs {
		if pids == nil {
			continue
		}
		for _, pid := range pids() {
			dir := "/proc/" + strconv.Itoa(pid) + "/fd"
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				var st syscall.Stat_t
				if syscall.Stat(dir+"/"+e.Name(), &st) != nil {
					continue
				}
				if st.Nlink != 0 || uint64(st.Dev) != dev || st.Mode&syscall.S_IFMT != syscall.S_IFREG || seen[st.Ino] {
					continue
				}
				seen[st.Ino] = true
				mu.Lock()
				_, counted := known[st.Ino]
				mu.Unlock()
				if !counted {
					bytes += st.Blocks * 512
					files++
				}
			}
		}
	}
	return bytes, files
}

// Close releases the inotify instance; watches still going stop counting.
func (wd *Watchdog) Close() {
	wd.once.Do(func() { wd.initErr = errors.New("the watchdog is closed") })
	wd.mu.Lock()
	f := wd.file
	wd.file, wd.fd = nil, -1
	wd.mu.Unlock()
	if f != nil {
		f.Close()
	}
}
