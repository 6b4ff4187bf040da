package envexec

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
)

// init keeps the launcher's main goroutine on the process's first thread:
// the command must be exec'd from it, so that it keeps the launcher's pid,
// the pid strace saw start (an exec from another thread takes over the
// pid too, but strace reports it under that thread's id first). Only the
// launcher is locked; the engine itself is not.
func init() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		runtime.LockOSThread()
	}
}

// Main is the launcher: main calls it with the arguments after Arg. It
// returns only when the command could not be started, with the exit code
// to end with (127, as a shell's for a command that cannot run).
func Main(args []string, stderr io.Writer) int {
	err := launch(args)
	fmt.Fprintf(stderr, "senclaw launcher: %v\n", err)
	return 127
}

func launch(args []string) error {
	r, err := parse(args)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(r.envFD), "env")
	data, err := io.ReadAll(io.LimitReader(f, maxEnv+1))
	f.Close() // before the exec: the command does not get it
	if err != nil {
		return fmt.Errorf("reading the environment: %w", err)
	}
	if len(data) > maxEnv {
		return fmt.Errorf("the environment is larger than %d bytes", maxEnv)
	}
	if d := r.drop; d != nil {
		// The syscall package changes every thread's credentials, so no
		// thread of this process keeps root up to the exec.
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("clearing supplementary groups: %w", err)
		}
		if err := syscall.Setresgid(int(d.GID), int(d.GID), int(d.GID)); err != nil {
			return fmt.Errorf("setting gid %d: %w", d.GID, err)
		}
		if err := syscall.Setresuid(int(d.UID), int(d.UID), int(d.UID)); err != nil {
			return fmt.Errorf("setting uid %d: %w", d.UID, err)
		}
	}
	return syscall.Exec(r.argv[0], r.argv, splitEnv(data))
}
