package landlock

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// supervise runs the command as a child of the helper instead of
// becoming it, for runs without a cgroup: the helper, confined like the
// command (same user, seccomp and Landlock domain), is the run's
// subreaper, so whatever the command leaves, through setsid and a double
// fork included, is reparented to the helper rather than to init, and
// stays where the engine finds it (the helper's descendants). When the
// command ends, the helper kills what is left, reaps it and exits as the
// command did, as bwrap's init does for its pid namespace.
func supervise(status *os.File, path string, s *setup) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(status, errors.New("becoming the run's subreaper: "+err.Error()))
	}
	cmd := &exec.Cmd{Path: path, Args: s.Argv, Env: s.Env, Dir: s.Dir,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	// The signals a caller passes to its run (Process.Signal) are the
	// command's, not the helper's.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, passed...)
	err := cmd.Start()
	status.Close() // the command is executed (or cannot be): setup is over
	if err != nil {
		os.Stderr.WriteString("senclaw: " + s.Argv[0] + ": " + err.Error() + "\n")
		if errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	go func() {
		for sig := range sigs {
			_ = cmd.Process.Signal(sig)
		}
	}()
	_ = cmd.Wait()
	signal.Stop(sigs)
	killChildren()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// passed are the signals the supervising helper passes to the command.
var passed = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// killChildren kills and reaps every child the helper has, the orphans it
// took in as subreaper included, until there are none.
func killChildren() {
	self := strconv.Itoa(os.Getpid())
	for {
		for _, pid := range children(self) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); errors.Is(err, syscall.ECHILD) {
			return
		}
	}
}

// children lists the pids whose parent is ppid.
func children(ppid string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st := string(b)
		if i := strings.LastIndexByte(st, ')'); i >= 0 {
			if f := strings.Fields(st[i+1:]); len(f) > 1 && f[1] == ppid {
				out = append(out, pid)
			}
		}
	}
	return out
}
