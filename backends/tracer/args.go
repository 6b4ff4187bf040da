package tracer

import (
	"strconv"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/envexec"
)

// Syscalls are the system calls strace is asked to stop on: the ones that
// name files, start programs or open connections. A "?" prefix lets strace
// skip calls that do not exist on the machine's architecture (arm64 has no
// open, creat, rename...). io_uring_setup is listed so that a ring set up
// where the seccomp filter allows it shows as "trace incomplete".
var Syscalls = []string{
	"execve", "execveat",
	"?open", "openat", "?openat2", "?creat",
	"?rename", "renameat", "?renameat2",
	"?unlink", "unlinkat", "?rmdir", "?mkdir", "mkdirat",
	"truncate", "?link", "linkat", "?symlink", "symlinkat",
	"connect", "bind", "?io_uring_setup",
}

// StringSize is strace's -s: long enough for real paths and argv words,
// short enough that a huge argument does not flood the pipe.
const StringSize = 1024

// Credential is who the traced command runs as when strace itself runs as
// root: setpriv drops to it before the command execs.
type Credential struct {
	UID, GID uint32
}

// Command describes one strace invocation.
type Command struct {
	// Strace and Setpriv are absolute paths of the tools.
	Strace, Setpriv string
	// Output is the path strace opens for its output (a pipe of the
	// engine's, reached through /proc/<engine>/fd/<n>).
	Output string
	// Drop, when set, runs the command as this user (strace stays root,
	// so that the traced code can neither signal nor ptrace it).
	Drop *Credential
	// Launcher, when set, is the envexec launcher (the engine's own
	// executable) that gives the command its environment, read from
	// descriptor EnvFD, and drops to Drop in setpriv's place.
	Launcher string
	EnvFD    int
	// Argv is the command to trace; Argv[0] is an absolute path.
	Argv []string
}

// LauncherExecs is how many successful execve calls at the start of the
// output belong to the launch (setpriv or the envexec launcher) rather
// than to Argv.
func (c Command) LauncherExecs() int {
	if c.Drop != nil || c.Launcher != "" {
		return 1
	}
	return 0
}

// StraceArgs builds strace's argument list (without argv[0]). It is a
// pure function. The options:
//   - -f --seccomp-bpf: follow forks, and stop only on the listed calls
//     (the others run at full speed);
//   - -qq -e signal=none: no attach, exit or signal lines;
//   - -ttt: absolute times; -yy: descriptors resolved to paths and
//     socket addresses; -s: string size.
func StraceArgs(c Command) []string {
	trace := "trace="
	for i, s := range Syscalls {
		if i > 0 {
			trace += ","
		}
		trace += s
	}
	a := []string{
		"-f", "--seccomp-bpf", "-qq", "-e", "signal=none", "-e", trace,
		"-ttt", "-yy", "-s", strconv.Itoa(StringSize), "-o", c.Output, "--",
	}
	if c.Launcher != "" {
		var drop *backends.Credential
		if c.Drop != nil {
			drop = &backends.Credential{UID: c.Drop.UID, GID: c.Drop.GID}
		}
		return append(a, envexec.Argv(c.Launcher, c.EnvFD, drop, c.Argv)...)
	}
	if c.Drop != nil {
		a = append(a, c.Setpriv,
			"--reuid="+strconv.FormatUint(uint64(c.Drop.UID), 10),
			"--regid="+strconv.FormatUint(uint64(c.Drop.GID), 10),
			"--clear-groups", "--")
	}
	return append(a, c.Argv...)
}
