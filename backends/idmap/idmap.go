// Package idmap lets a root engine's sandbox user write a host folder
// without changing it on disk.
//
// It binds an idmapped mount of the folder (Linux 5.12 and later, on file
// systems that support them) in which its owner's uid and gid, and only
// those, appear as the sandbox user's. What the sandbox writes there belongs
// on disk to the folder's owner; files of anyone else keep their permissions
// for "others".
//
// The mount never appears in this machine's own mount namespace, where
// any process of the sandbox user could reach it: Clone makes it
// detached, and the launcher (the engine's executable started with Arg,
// in a mount namespace of its own) attaches it at a mount point of Dir
// there, drops to the sandbox user and execs bwrap, which binds it into
// the sandbox from that private view.
package idmap

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/senclaw/sandbox/backends/reexec"
)

// Arg is the first argument that makes the engine's executable the
// launcher (its name in the reexec table).
const Arg = "__senclaw-idmap-exec"

func init() { reexec.Register(Arg, Main) }

// Mapping is one idmapped mount's only mapping: the folder's owner (on
// disk) seen as the sandbox user.
type Mapping struct {
	OwnerUID, OwnerGID     uint32
	SandboxUID, SandboxGID uint32
}

// Attach is one mount the launcher attaches: the detached mount's
// descriptor, as the launcher inherits it, and the mount point's number
// under the launcher's directory.
type Attach struct {
	FD, Point int
}

// Point is the path of mount point n under dir, where the launcher
// attaches the n-th idmapped mount of a run.
func Point(dir string, n int) string { return dir + "/" + strconv.Itoa(n) }

// Argv is the launcher's command line: self (the engine's executable)
// attaches each of mounts under dir, drops to uid and gid and execs argv
// (argv[0] an absolute path). It is a pure function.
func Argv(self, dir string, mounts []Attach, uid, gid uint32, argv []string) []string {
	a := []string{self, Arg, "--dir", dir}
	for _, m := range mounts {
		a = append(a, "--mount", strconv.Itoa(m.FD)+"="+strconv.Itoa(m.Point))
	}
	a = append(a, "--uid", strconv.FormatUint(uint64(uid), 10), "--gid", strconv.FormatUint(uint64(gid), 10), "--")
	return append(a, argv...)
}

// request is a parsed launcher command line.
type request struct {
	dir      string
	mounts   []Attach
	uid, gid uint32
	argv     []string
}

func parse(args []string) (request, error) {
	var r request
	uidSet, gidSet := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			r.argv = args[i+1:]
			break
		}
		if i+1 >= len(args) {
			return r, fmt.Errorf("%s needs a value", a)
		}
		v := args[i+1]
		i++
		switch a {
		case "--dir":
			r.dir = v
		case "--mount":
			fd, point, ok := cutInts(v)
			if !ok || fd < 3 || point < 0 {
				return r, fmt.Errorf("--mount %q: want FD=N", v)
			}
			r.mounts = append(r.mounts, Attach{FD: fd, Point: point})
		case "--uid", "--gid":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n == 0 {
				return r, fmt.Errorf("%s %q: want a user other than root", a, v)
			}
			if a == "--uid" {
				r.uid, uidSet = uint32(n), true
			} else {
				r.gid, gidSet = uint32(n), true
			}
		default:
			return r, fmt.Errorf("unknown option %q", a)
		}
	}
	switch {
	case r.dir == "" || r.dir[0] != '/':
		return r, errors.New("--dir must be an absolute path")
	case !uidSet || !gidSet:
		return r, errors.New("--uid and --gid are needed: the launcher never execs as root")
	case len(r.argv) == 0 || r.argv[0] == "" || r.argv[0][0] != '/':
		return r, errors.New("no command after -- (an absolute path)")
	}
	return r, nil
}

func cutInts(s string) (int, int, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			a, err1 := strconv.Atoi(s[:i])
			b, err2 := strconv.Atoi(s[i+1:])
			return a, b, err1 == nil && err2 == nil
		}
	}
	return 0, 0, false
}
