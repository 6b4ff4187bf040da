package netfwd

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/backends/netfwd/mux"
)

// relayMain is the relay role (RelayArg): args is the plumbing
// directory. It ends when the engine's side of its stdin does.
func relayMain(args []string, stderr io.Writer) int {
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		fmt.Fprintln(stderr, "senclaw-netfwd: --relay wants the plumbing directory")
		return exitSetup
	}
	dir := args[0]
	sock := filepath.Join(dir, ProxySocket)
	_ = os.Remove(sock) // an earlier relay's
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintf(stderr, "senclaw-netfwd: listening on %s: %v\n", sock, err)
		return exitSetup
	}
	defer os.Remove(sock)
	defer l.Close()
	s := mux.New(os.Stdin, os.Stdout, false)
	go accept(l, func(c net.Conn) {
		st, err := s.Open("proxy")
		if err != nil {
			c.Close()
			return
		}
		Relay(c, st)
	})
	go func() {
		for {
			st, err := s.Accept()
			if err != nil {
				return
			}
			go dialListen(dir, st)
		}
	}()
	if err := s.Hello(RelayReady); err != nil {
		return exitSetup
	}
	<-s.Done()
	return 0
}

// dialListen connects a stream from the engine to the run's listen
// socket it names.
func dialListen(dir string, st *mux.Stream) {
	ps, ok := strings.CutPrefix(st.Meta(), "listen:")
	p, err := port(ps)
	if !ok || err != nil {
		st.Close()
		return
	}
	c, err := net.DialTimeout("unix", filepath.Join(dir, ListenSocket(p)), 5*time.Second)
	if err != nil {
		st.Close()
		return
	}
	Relay(st, c)
}

// reapChild runs argv as the child of this process made a subreaper,
// with its pid in pidFile, and once argv has ended kills and reaps
// every process left below it (--reap).
func reapChild(argv []string, pidFile string, stderr io.Writer) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "senclaw-netfwd: becoming the run's subreaper: %v\n", err)
		return exitSetup
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		fmt.Fprintf(stderr, "senclaw-netfwd: writing the run's pid file: %v\n", err)
		return exitSetup
	}
	// What the run orphans and ends comes to this process: reaped as it
	// ends, so that zombies do not fill the pids limit of a long run.
	var main atomic.Int64
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	go func() {
		for range chld {
			m := main.Load()
			if m == 0 {
				continue // the command's own pid is not known yet
			}
			for _, k := range childrenOf(os.Getpid()) {
				if int64(k) != m && zombie(k) {
					var ws unix.WaitStatus
					_, _ = unix.Wait4(k, &ws, unix.WNOHANG, nil)
				}
			}
		}
	}()
	_, err := unix.IoctlGetTermios(0, unix.TCGETS)
	return runChildThen(argv, err == nil, stderr, func(pid int) { main.Store(int64(pid)) }, func() {
		signal.Stop(chld)
		killChildren()
		_ = os.Remove(pidFile)
	})
}

// zombie reports whether pid has ended and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && strings.HasPrefix(s[i+1:], " Z")
}

// killChildren kills this process's children until none is left: what
// the run's processes orphaned comes to this subreaper as they die.
func killChildren() {
	self := os.Getpid()
	for range 1000 {
		kids := childrenOf(self)
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		if len(kids) == 0 {
			var ws unix.WaitStatus
			if _, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); err == unix.ECHILD {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	want := strconv.Itoa(pid)
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == want {
			out = append(out, n)
		}
	}
	return out
}
