package idmap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/senclaw/sandbox/backends"
	"golang.org/x/sys/unix"
)

// Clone returns a detached idmapped mount of the directory dir (an O_PATH
// handle the caller opened and checked) with m as its only mapping, not
// recursive (mounts below dir stay out) and with no setuid and no device
// files. The caller passes it to the launcher and closes it.
func Clone(dir *os.File, m Mapping) (*os.File, error) {
	if m.SandboxUID == 0 || m.SandboxGID == 0 {
		return nil, errors.New("an idmapped mount never maps to root")
	}
	ns, err := userns(m)
	if err != nil {
		return nil, err
	}
	fd, err := unix.OpenTree(int(dir.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return nil, explain("cloning the folder's mount", err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(ns)}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(fd)
		return nil, explain("idmapping the folder's mount", err)
	}
	return os.NewFile(uintptr(fd), "idmapped:"+dir.Name()), nil
}

// Check says whether an idmapped mount of the directory path can be made
// here (the kernel, its file system, the engine's privilege), and why not.
func Check(path string, m Mapping) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	dir := os.NewFile(uintptr(fd), path)
	defer dir.Close()
	f, err := Clone(dir, m)
	if err != nil {
		return err
	}
	return f.Close()
}

// explain turns the errors of open_tree and mount_setattr into reasons.
func explain(what string, err error) error {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%s: this kernel has no idmapped mounts (Linux 5.12 or later has them): %w", what, err)
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%s: the folder's file system does not support idmapped mounts: %w", what, err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%s: only a root engine can make idmapped mounts: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// The user namespaces that carry the mappings, one per mapping, kept for
// the engine's life (a namespace lasts while a descriptor holds it).
var (
	usernsMu sync.Mutex
	usernses = map[Mapping]int{}
)

// userns returns a user namespace whose only uid and gid mappings are m's
// owner seen as the sandbox user. It is made by a short-lived child
// (sleep) in a new user namespace, held by a descriptor of it.
func userns(m Mapping) (int, error) {
	usernsMu.Lock()
	defer usernsMu.Unlock()
	if fd, ok := usernses[m]; ok {
		return fd, nil
	}
	sleep := ""
	for _, p := range []string{"/usr/bin/sleep", "/bin/sleep"} {
		if _, err := os.Stat(p); err == nil {
			sleep = p
			break
		}
	}
	if sleep == "" {
		return -1, errors.New("making the idmapped mount's user namespace: sleep(1) is not in /usr/bin or /bin")
	}
	cmd := &exec.Cmd{Path: sleep, Args: []string{"sleep", "60"}, Env: backends.HelperEnv(), Stdout: io.Discard, Stderr: io.Discard}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER,
		// The mapping of the mount: the owner's id (inside) is the sandbox
		// user's (outside), and nothing else is mapped.
		UidMappings: []syscall.SysProcIDMap{{ContainerID: int(m.OwnerUID), HostID: int(m.SandboxUID), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: int(m.OwnerGID), HostID: int(m.SandboxGID), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return -1, explain("making the idmapped mount's user namespace", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	fd, err := unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("making the idmapped mount's user namespace: %w", err)
	}
	usernses[m] = fd
	return fd, nil
}

// Main is the launcher: in a mount namespace of its own (the engine
// starts it with CLONE_NEWNS), it attaches each idmapped mount it got at
// its mount point, drops to the sandbox user and execs the command
// (bwrap). It returns only on failure, with the exit code; its messages
// go to stderr.
func Main(args []string) int {
	r, err := parse(args)
	if err == nil {
		err = attach(r)
	}
	if err == nil {
		err = drop(r.uid, r.gid)
	}
	if err == nil {
		err = syscall.Exec(r.argv[0], r.argv, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "senclaw idmap launcher: %v\n", err)
	return 125
}

// attach attaches r's mounts in this process's own mount namespace, never
// in its parent's, where every process of the sandbox user would find
// them.
func attach(r request) error {
	var own, parent unix.Stat_t
	if err := unix.Stat("/proc/self/ns/mnt", &own); err != nil {
		return err
	}
	if err := unix.Stat("/proc/"+strconv.Itoa(os.Getppid())+"/ns/mnt", &parent); err != nil {
		return err
	}
	if own.Ino == parent.Ino && own.Dev == parent.Dev {
		return errors.New("not in a mount namespace of its own; nothing is attached")
	}
	// Nothing attached here may propagate to a namespace it came from.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	for _, m := range r.mounts {
		err := unix.MoveMount(m.FD, "", unix.AT_FDCWD, Point(r.dir, m.Point), unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(m.FD)
		if err != nil {
			return fmt.Errorf("attaching idmapped mount %d: %w", m.Point, err)
		}
	}
	return nil
}

// drop makes every thread the sandbox user's, with no supplementary group
// and, as a uid change from root does, no capability left; the parent's
// death kills it again (a change of credentials clears that).
func drop(uid, gid uint32) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(int(gid), int(gid), int(gid)); err != nil {
		return fmt.Errorf("setresgid: %w", err)
	}
	if err := syscall.Setresuid(int(uid), int(uid), int(uid)); err != nil {
		return fmt.Errorf("setresuid: %w", err)
	}
	if os.Getuid() != int(uid) || os.Geteuid() != int(uid) || os.Getgid() != int(gid) {
		return errors.New("the sandbox user's credentials did not take")
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl: %w", err)
	}
	if os.Getppid() == 1 {
		return errors.New("the engine is gone")
	}
	return nil
}
