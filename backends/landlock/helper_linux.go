package landlock

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/unixguard"
	"golang.org/x/sys/unix"
)

// maxSetup bounds what the helper reads from the setup pipe.
const maxSetup = 64 << 20

// RunHelper is the helper: main calls it, first of all, when its first
// argument is HelperCommand, and exits with what it returns. It confines
// itself as the setup read from fd 3 says and execs the command; it
// returns only when that fails (1: the setup failed, said on fd 4; 126 or
// 127: the command could not be executed, said on stderr).
//
// Every step runs on one locked OS thread, the one that execs: the
// credentials, no_new_privs, the seccomp filter and the Landlock domain
// are per thread in Linux, and execve keeps exactly that thread's. (So
// the ruleset is built with go-landlock and enforced on this thread
// rather than on every thread of the helper, which needs no cgo-free
// build: the desktop build has cgo.)
func RunHelper() int {
	runtime.LockOSThread() // never unlocked: this thread execs
	// Nothing the helper inherited beyond stdin, stdout and stderr
	// reaches the command: descriptors a shell or service manager left
	// open in the engine are closed at the exec, as are the two pipes.
	markCloseOnExec()
	status := os.NewFile(statusFD, "status")
	in := os.NewFile(setupFD, "setup")
	var s setup
	err := json.NewDecoder(io.LimitReader(in, maxSetup)).Decode(&s)
	in.Close()
	if err != nil {
		return fail(status, fmt.Errorf("reading the setup: %w", err))
	}
	if err := confine(&s); err != nil {
		return fail(status, err)
	}
	path, ok := backends.FindExecutable(s.Argv[0], envValue(s.Env, "PATH"))
	if !ok {
		fmt.Fprintf(os.Stderr, "senclaw: %s: command not found\n", s.Argv[0])
		return 127
	}
	if s.Supervise {
		return supervise(status, path, &s)
	}
	err = syscall.Exec(path, s.Argv, s.Env)
	fmt.Fprintf(os.Stderr, "senclaw: %s: %v\n", s.Argv[0], err)
	if errors.Is(err, fs.ErrNotExist) {
		return 127
	}
	return 126
}

func fail(status *os.File, err error) int {
	fmt.Fprint(status, err.Error())
	status.Close()
	return 1
}

// markCloseOnExec marks every descriptor above 2 close-on-exec.
func markCloseOnExec() {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// confine does the steps in their order: credentials, death signal,
// rlimits, no_new_privs, seccomp, Landlock, then, as the confined
// sandbox user, the mount links, the temp dir and the working directory.
func confine(s *setup) error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return errors.New("no command")
	}
	if err := dropCredentials(s.User); err != nil {
		return err
	}
	// A change of credentials clears the death signal: ask again, then
	// make sure the engine did not go in between.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("setting the death signal: %w", err)
	}
	if os.Getppid() != s.Parent {
		return errors.New("the engine is gone")
	}
	for _, r := range s.Rlimits {
		var cur unix.Rlimit
		if err := unix.Prlimit(0, r.Resource, nil, &cur); err != nil {
			return fmt.Errorf("reading rlimit %d: %w", r.Resource, err)
		}
		v := min(r.Value, cur.Max)
		if err := unix.Prlimit(0, r.Resource, &unix.Rlimit{Cur: v, Max: v}, nil); err != nil {
			return fmt.Errorf("setting rlimit %d: %w", r.Resource, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := restrict(s); err != nil {
		return err
	}
	for _, l := range s.Links {
		if err := makeLink(l); err != nil {
			return err
		}
	}
	for _, d := range s.MkDirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("making %s: %w", d, err)
		}
	}
	if err := unix.Chdir(s.Dir); err != nil {
		return fmt.Errorf("entering the workspace %s: %w", s.Dir, err)
	}
	// After the helper's own opens: the filter refuses openat2, whose
	// mode it cannot see (no setuid file), and restrict opens each grant
	// with it, following no link.
	if err := loadSeccomp(s.Seccomp); err != nil {
		return err
	}
	if s.Guard > 0 {
		// Last: the engine answers the command's connects from here on.
		if err := unixguard.InstallThread(s.Guard); err != nil {
			return err
		}
	}
	return nil
}

// dropCredentials makes this thread the sandbox user with no groups and
// no capabilities; u nil keeps the user (an unprivileged engine) and only
// clears capabilities. The raw system calls change this thread only,
// which is the one that execs.
func dropCredentials(u *backends.Credential) error {
	if u != nil {
		if os.Geteuid() != 0 {
			return fmt.Errorf("cannot become uid %d: the engine is not root", u.UID)
		}
		if u.UID == 0 || u.GID == 0 {
			return errors.New("refusing to run the sandbox as root")
		}
		// No capability can come back later, whatever is executed.
		if err := dropBounding(); err != nil {
			return err
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			return fmt.Errorf("clearing the supplementary groups: %w", e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(u.GID), uintptr(u.GID), uintptr(u.GID)); e != 0 {
			return fmt.Errorf("setresgid %d: %w", u.GID, e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(u.UID), uintptr(u.UID), uintptr(u.UID)); e != 0 {
			return fmt.Errorf("setresuid %d: %w", u.UID, e)
		}
		var r, e, sv uint32
		unix.RawSyscall(unix.SYS_GETRESUID, uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&sv)))
		if r != u.UID || e != u.UID || sv != u.UID {
			return fmt.Errorf("still uid %d/%d/%d after setresuid %d", r, e, sv, u.UID)
		}
	}
	if u == nil && os.Geteuid() == 0 {
		// A host exec of a root engine stays uid 0: no capability may
		// come back to it, at an exec as root or at all.
		if err := dropBounding(); err != nil {
			return err
		}
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, rootLocked, 0, 0, 0); err != nil {
			return fmt.Errorf("setting the securebits of root: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	return nil
}

// rootLocked are the securebits (linux/securebits.h) that make uid 0 an
// ordinary uid for good: no capabilities at an exec as root (NOROOT),
// none kept or raised at a change of uid, each locked.
const rootLocked = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7

// dropBounding empties this thread's capability bounding set.
func dropBounding() error {
	for c := 0; c <= 63; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability this kernel knows
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// loadSeccomp installs prog (struct sock_filter records) on this thread.
func loadSeccomp(prog []byte) error {
	if len(prog) == 0 || len(prog)%8 != 0 || len(prog)/8 > math.MaxUint16 {
		return fmt.Errorf("seccomp program of %d bytes", len(prog))
	}
	filter := make([]unix.SockFilter, len(prog)/8)
	for i := range filter {
		r := prog[8*i:]
		filter[i] = unix.SockFilter{Code: binary.NativeEndian.Uint16(r), Jt: r[2], Jf: r[3], K: binary.NativeEndian.Uint32(r[4:])}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("loading the seccomp filter: %w", e)
	}
	runtime.KeepAlive(filter)
	return nil
}

// configs are go-landlock's configurations by ABI: each handles every
// right of its ABI, so what no rule grants is refused.
var configs = []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// configFor is the configuration handling all of abi's rights (capped at
// the newest ABI go-landlock knows).
func configFor(abi int) landlock.Config {
	return configs[min(abi, len(configs))-1]
}

// Rights of each Access, before they are narrowed to what the ABI has.
const (
	rightsReadFile = ll.AccessFSExecute | ll.AccessFSReadFile
	rightsReadDir  = rightsReadFile | ll.AccessFSReadDir
	rightsDevice   = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
	rightsWrite    = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
		ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer |
		ll.AccessFSTruncate
	rightsFileWrite = ll.AccessFSWriteFile | ll.AccessFSTruncate
)

// restrict builds one ruleset with the filesystem, TCP and scope rules
// of s.ABI and enforces it on this thread. Each granted path is opened
// without following any symlink (the engine's paths are canonical), and
// the rule names the very inode opened (/proc/self/fd/N), so a path
// swapped for a link since the engine looked grants nothing more.
func restrict(s *setup) error {
	if s.ABI < MinABI {
		return fmt.Errorf("landlock ABI %d is older than %d", s.ABI, MinABI)
	}
	cfg := configFor(s.ABI)
	var rules []landlock.Rule
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, g := range s.Grants {
		fd, err := unix.Openat2(unix.AT_FDCWD, g.Path, &unix.OpenHow{
			Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
		})
		if err != nil {
			if g.Access == ReadWrite {
				return fmt.Errorf("refused: %s cannot be opened without following a symlink (%v); nothing ran", g.Path, err)
			}
			continue // a read grant the sandbox user cannot reach anyway, or gone
		}
		fds = append(fds, fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("checking %s: %w", g.Path, err)
		}
		dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		var rights landlock.AccessFSSet
		switch {
		case g.Access == Device && !dir:
			rights = rightsDevice
		case g.Access == Read && dir:
			rights = rightsReadDir
		case g.Access == Read:
			rights = rightsReadFile
		case g.Access == ReadWrite && dir:
			rights = rightsReadDir | rightsWrite
		case g.Access == ReadWrite:
			rights = rightsReadFile | rightsFileWrite
		default:
			continue
		}
		rights &= cfg.HandledAccessFS
		rules = append(rules, landlock.PathAccess(rights, "/proc/self/fd/"+strconv.Itoa(fd)))
	}
	if s.ABI >= 4 {
		for _, p := range s.ConnectTCP {
			rules = append(rules, landlock.ConnectTCP(p))
		}
		for _, p := range s.BindTCP {
			rules = append(rules, landlock.BindTCP(p))
		}
	} else if len(s.ConnectTCP)+len(s.BindTCP) > 0 {
		return fmt.Errorf("landlock ABI %d has no TCP rules", s.ABI)
	}
	ruleset, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("building the landlock ruleset: %w", err)
	}
	if ruleset < 0 {
		return errors.New("the landlock ruleset came out empty")
	}
	defer unix.Close(ruleset)
	if err := ll.LandlockRestrictSelf(ruleset, flags); err != nil {
		return fmt.Errorf("enforcing the landlock ruleset: %w", err)
	}
	return nil
}

// makeLink puts a symlink at l.Path to l.Target, replacing a symlink that
// is there; anything else the sandbox put there stays.
func makeLink(l link) error {
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
		return fmt.Errorf("making the mount link %s: %w", l.Path, err)
	}
	if fi, err := os.Lstat(l.Path); err == nil {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return nil
		}
		if cur, _ := os.Readlink(l.Path); cur == l.Target {
			return nil
		}
		if err := os.Remove(l.Path); err != nil {
			return fmt.Errorf("replacing the mount link %s: %w", l.Path, err)
		}
	}
	if err := os.Symlink(l.Target, l.Path); err != nil {
		return fmt.Errorf("making the mount link %s: %w", l.Path, err)
	}
	return nil
}

// envValue is the value of key in env (K=V), or "".
func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
