package direct

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// underReaper rewrites cmd (not yet started) to start the child
// subreaper, which starts the command. The reaper is a host-side helper:
// it starts with an empty environment, and the run's reaches only the
// command, through a pipe (never argv, which other users can read).
func underReaper(cmd *exec.Cmd, reaper string) (tree, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting the subreaper: %w", err)
	}
	env := []byte(strings.Join(cmd.Env, "\x00"))
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	cmd.Args = append([]string{reaper, ReaperArg, strconv.Itoa(fd), cmd.Path}, cmd.Args...)
	cmd.Path = reaper
	cmd.Env = []string{}
	t := &reaperTree{envR: r, done: make(chan struct{})}
	go func() {
		_, _ = w.Write(env)
		w.Close()
	}()
	return t, nil
}

// reaperTree is a run under the child subreaper.
type reaperTree struct {
	envR     *os.File
	reaper   int
	done     chan struct{} // closed by release: the run is over
	doneOnce sync.Once
}

func (t *reaperTree) started(pid int) {
	t.reaper = pid
	t.envR.Close()
}

// kill asks the reaper to kill everything below it and exit (SIGTERM),
// and kills its group if it has not within 3 s. With keep (a traced run:
// the reaper and strace), the engine kills the rest below the reaper
// itself.
func (t *reaperTree) kill(keep ...int) error {
	if t.reaper == 0 {
		return nil
	}
	if len(keep) > 0 {
		for _, pid := range descendants(t.reaper) {
			if !slices.Contains(keep, pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	}
	if err := syscall.Kill(t.reaper, syscall.SIGTERM); err != nil {
		return nil // gone already
	}
	go func(pid int) {
		select {
		case <-t.done:
		case <-time.After(3 * time.Second):
			_ = killGroup(pid)
		}
	}(t.reaper)
	return nil
}

func (t *reaperTree) pids() []int { return descendants(t.reaper) }
func (t *reaperTree) release()    { t.doneOnce.Do(func() { close(t.done) }) }
func (t *reaperTree) held() string {
	return "processes: a child subreaper (no cgroup could be made) inherits what the run leaves behind and kills it when the run ends; a process that kills the reaper first, or starts through another service, outlives it"
}

// RunReaper is the child subreaper's main, called by main with the
// arguments after ReaperArg: the descriptor of the environment pipe, the
// command's path and its argv. It makes itself a subreaper (every orphan
// below it becomes its child), starts the command with the environment
// read from the pipe, and when the command exits, or a signal asks it
// to, or its parent (the engine) dies, it kills every process below it,
// reaps them, and ends as the command did.
func RunReaper(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "senclaw: the subreaper needs a descriptor, a path and an argv")
		return 2
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "senclaw: the subreaper's descriptor %q: %v\n", args[0], err)
		return 2
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "senclaw: becoming a subreaper:", err)
		return 126
	}
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0)
	if os.Getppid() == 1 {
		return 137 // the engine is gone already
	}
	envFile := os.NewFile(uintptr(fd), "env")
	data, err := io.ReadAll(envFile)
	envFile.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "senclaw: reading the run's environment:", err)
		return 126
	}
	var env []string
	for _, kv := range bytes.Split(data, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := &exec.Cmd{Path: args[1], Args: args[2:], Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "senclaw: starting %s: %v\n", args[1], err)
		return 127
	}
	leader := cmd.Process.Pid
	go func() {
		<-stop
		killBelow(os.Getpid())
	}()
	var status syscall.WaitStatus
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			break // ECHILD: nothing is left below
		}
		if pid == leader {
			status = ws
			killBelow(os.Getpid())
		}
	}
	if status.Signaled() {
		signal.Reset()
		_ = syscall.Kill(os.Getpid(), status.Signal())
		return 128 + int(status.Signal())
	}
	return status.ExitStatus()
}

// killBelow SIGKILLs every process below pid until none is left.
func killBelow(pid int) {
	for round := 0; round < 50; round++ {
		below := descendants(pid)
		if len(below) == 0 {
			return
		}
		for _, p := range below {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(time.Duration(round+1) * time.Millisecond)
	}
}

// descendants lists the live processes below root, from /proc (a zombie
// is dead already, waiting to be reaped).
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	zombie := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, state, ok := statOf(pid); ok {
			parent[pid], zombie[pid] = pp, state == "Z"
		}
	}
	var out []int
	for pid := range parent {
		if zombie[pid] {
			continue
		}
		for a, n := parent[pid], 0; a > 1 && n < 4096; a, n = parent[a], n+1 {
			if a == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// parentOf reads pid's parent.
func parentOf(pid int) (int, bool) {
	pp, _, ok := statOf(pid)
	return pp, ok
}

// statOf reads pid's parent and state from /proc/PID/stat (after the
// command name, which may hold spaces and parentheses).
func statOf(pid int) (ppid int, state string, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0, "", false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, f[0], err == nil
}
