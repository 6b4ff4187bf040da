package netfwd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends/netfwd/remotefs"
	"github.com/senclaw/sandbox/backends/unixguard"
	"golang.org/x/sys/unix"
)

// config is the forwarder's command line.
type config struct {
	httpPort, socksPort int
	proxySock           string
	loopback            []int
	listen              map[int]string
	// ttyFD is the run's terminal (0: none), to become ttyStd.
	ttyFD  int
	ttyStd []int
	argv   []string
	// unixGuard is the descriptor over which the Unix socket guard is
	// handed to the engine, or -1 (backends/unixguard).
	unixGuard int
	// portsFD is the descriptor over which the engine binds the loopback
	// ports below 1024 (ports_linux.go), or 0.
	portsFD int
	// argvFD is the descriptor the command comes over, or 0 (the command
	// is after "--"): a sandbox made ahead gets its command only when a
	// run takes it (ReadArgv).
	argvFD int
	// reap is the pid file of a run in a container of a remote engine
	// (--reap): the forwarder runs the command as its child, reaps what
	// the command leaves, and kills it when the command ends (remote.go).
	reap string
}

// forwards reports whether the forwarder has anything to serve; when it
// has not (a terminal or the guard alone), it execs the command in its
// own place.
func (c *config) forwards() bool {
	return c.httpPort != 0 || c.socksPort != 0 || len(c.loopback) > 0 || len(c.listen) > 0
}

// exitSetup is the forwarder's own exit code when it could not set up
// (bad arguments, a port it cannot open); 127 when the command is missing.
const exitSetup = 125

// Run is the forwarder: it opens its listeners, runs the command after
// "--" as its child with the same stdin, stdout, stderr and environment,
// passes signals on, and returns the command's exit code. When the command
// dies by a signal, Run kills its own process with the same signal, so the
// run's result is exactly the command's. It never writes to stdout; its
// own failures go to stderr prefixed with "senclaw-netfwd:".
func Run(args []string, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case remotefs.Arg:
			return remotefs.Serve(args[1:], os.Stdin, os.Stdout, stderr)
		case RelayArg:
			return relayMain(args[1:], stderr)
		}
	}
	cfg, err := parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "senclaw-netfwd: %v\n", err)
		return exitSetup
	}
	// The guard goes first: the forwarder's own connects go through it
	// too, and nothing of the sandbox runs before the engine took it.
	if cfg.unixGuard >= 0 {
		if err := unixguard.Install(cfg.unixGuard); err != nil {
			fmt.Fprintf(stderr, "senclaw-netfwd: %v\n", err)
			return exitSetup
		}
	}
	if cfg.ttyFD > 0 {
		if err := takeTerminal(cfg.ttyFD, cfg.ttyStd); err != nil {
			fmt.Fprintf(stderr, "senclaw-netfwd: setting up the terminal: %v\n", err)
			return exitSetup
		}
	}
	if cfg.forwards() {
		if err := cfg.start(); err != nil {
			fmt.Fprintf(stderr, "senclaw-netfwd: %v\n", err)
			return exitSetup
		}
	}
	if cfg.argvFD > 0 {
		// Everything above is ready before the command is there: it
		// starts as soon as it comes.
		argv, err := ReadArgv(os.NewFile(uintptr(cfg.argvFD), "argv"))
		if err != nil {
			fmt.Fprintf(stderr, "senclaw-netfwd: %v\n", err)
			return exitSetup
		}
		cfg.argv = argv
	}
	if cfg.reap != "" {
		return reapChild(cfg.argv, cfg.reap, stderr)
	}
	if !cfg.forwards() {
		return execCommand(cfg.argv, stderr) // nothing to forward
	}
	return runChild(cfg.argv, cfg.ttyFD > 0, stderr)
}

func parse(args []string) (*config, error) {
	c := &config{listen: map[int]string{}, unixGuard: -1}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			c.argv = args[i+1:]
			break
		}
		if i+1 >= len(args) {
			return nil, fmt.Errorf("%s needs a value", a)
		}
		v := args[i+1]
		i++
		switch a {
		case "--http", "--socks", "--loopback":
			p, err := port(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a, err)
			}
			switch a {
			case "--http":
				c.httpPort = p
			case "--socks":
				c.socksPort = p
			default:
				c.loopback = append(c.loopback, p)
			}
		case "--proxy-sock":
			c.proxySock = v
		case "--tty-fd":
			fd, err := strconv.Atoi(v)
			if err != nil || fd < 3 {
				return nil, fmt.Errorf("--tty-fd %q: want a descriptor above 2", v)
			}
			c.ttyFD = fd
		case "--tty-std":
			for _, f := range strings.Split(v, ",") {
				fd, err := strconv.Atoi(f)
				if err != nil || fd < 0 || fd > 2 {
					return nil, fmt.Errorf("--tty-std %q: want a list of 0, 1 and 2", v)
				}
				c.ttyStd = append(c.ttyStd, fd)
			}
		case "--unix-guard":
			fd, err := strconv.Atoi(v)
			if err != nil || fd < 3 {
				return nil, fmt.Errorf("--unix-guard %q: want an inherited descriptor", v)
			}
			c.unixGuard = fd
		case "--ports-fd":
			fd, err := strconv.Atoi(v)
			if err != nil || fd < 3 {
				return nil, fmt.Errorf("--ports-fd %q: want an inherited descriptor", v)
			}
			c.portsFD = fd
		case "--argv-fd":
			fd, err := strconv.Atoi(v)
			if err != nil || fd < 3 {
				return nil, fmt.Errorf("--argv-fd %q: want an inherited descriptor", v)
			}
			c.argvFD = fd
		case "--reap":
			if !strings.HasPrefix(v, "/") {
				return nil, fmt.Errorf("--reap %q: want the absolute path of a pid file", v)
			}
			c.reap = v
		case "--listen":
			ps, sock, ok := strings.Cut(v, "=")
			p, err := port(ps)
			if !ok || err != nil || sock == "" {
				return nil, fmt.Errorf("--listen %q: want PORT=SOCKET", v)
			}
			c.listen[p] = sock
		default:
			return nil, fmt.Errorf("unknown option %q", a)
		}
	}
	switch {
	case c.argvFD > 0 && len(c.argv) > 0:
		return nil, errors.New("--argv-fd and a command after -- are both given")
	case c.argvFD == 0 && len(c.argv) == 0:
		return nil, errors.New("no command after --")
	}
	if c.proxySock == "" && (c.httpPort != 0 || c.socksPort != 0 || len(c.loopback) > 0) {
		return nil, errors.New("--proxy-sock is needed with --http, --socks and --loopback")
	}
	return c, nil
}

func port(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%q is not a port", s)
	}
	return p, nil
}

// start opens every listener before the command runs, so that the command
// finds them ready. The goroutines serving them end with the process.
func (c *config) start() error {
	toProxy := func(Q int) func(net.Conn) {
		return func(in net.Conn) {
			up, err := net.DialTimeout("unix", c.proxySock, 10*time.Second)
			if err != nil {
				in.Close()
				return
			}
			if Q > 0 && socksConnectLoopback(up, Q) != nil {
				in.Close()
				up.Close()
				return
			}
			Relay(in, up)
		}
	}
	for _, p := range []int{c.httpPort, c.socksPort} {
		if p == 0 {
			continue
		}
		if err := serveTCP(p, toProxy(0)); err != nil {
			return err
		}
	}
	var bound []int // the ports the engine binds (ports_linux.go)
	for _, q := range c.loopback {
		if PrivilegedPort(q) && c.portsFD > 0 {
			bound = append(bound, q)
			continue
		}
		if err := serveTCP(q, toProxy(q)); err != nil {
			return err
		}
	}
	if c.portsFD > 0 {
		if len(bound) == 0 {
			unix.Close(c.portsFD)
			return errors.New("--ports-fd without a loopback port below 1024")
		}
		socks, err := askBound(c.portsFD, bound)
		if err != nil {
			return err
		}
		for i, s := range socks {
			if err := serveBound(s, bound[i], toProxy(bound[i])); err != nil {
				return err
			}
		}
	}
	for p, sock := range c.listen {
		l, err := listenUnix(sock)
		if err != nil {
			return fmt.Errorf("opening the forward of listen port %d: %w", p, err)
		}
		serve := func(l net.Listener) {
			accept(l, func(in net.Conn) {
				out, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p), 5*time.Second)
				if err != nil {
					out, err = net.DialTimeout("tcp", "[::1]:"+strconv.Itoa(p), 5*time.Second)
				}
				if err != nil {
					in.Close()
					return
				}
				Relay(in, out)
			})
		}
		if l != nil {
			go serve(l)
		} else {
			go takeOver(sock, serve)
		}
	}
	return nil
}

// takeOverEvery is how often a forwarder that found a listen port served
// by another run checks that the other run is still there.
const takeOverEvery = 500 * time.Millisecond

// takeOver waits while another run of the sandbox serves the listen
// socket sock, and serves it once that run is gone: the forward of a
// listen port must outlive the run that happened to open it first.
func takeOver(sock string, serve func(net.Listener)) {
	for {
		time.Sleep(takeOverEvery)
		l, err := listenUnix(sock)
		if err != nil {
			continue
		}
		if l != nil {
			serve(l)
			return
		}
	}
}

// serveTCP listens on 127.0.0.1:p inside the namespace. The port is
// shared (SO_REUSEPORT) with the forwarders of the sandbox's other runs:
// a container's runs share its namespace, and each run's forwarder must
// find its ports open however the runs overlap; the kernel hands each
// connection to one of them, and they all lead to the same proxy. Only a
// process of the same user can join the port, that is, the sandbox
// itself.
func serveTCP(p int, handle func(net.Conn)) error {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return fmt.Errorf("listening on 127.0.0.1:%d: %w", p, err)
	}
	go accept(l, handle)
	return nil
}

// listenUnix binds sock for this run when no other live run of the
// sandbox serves it, and returns nil otherwise. Who serves it is decided
// by a lock (sock + ".lock", held for the forwarder's life and freed by
// the kernel when it ends), not by connecting to the socket, which would
// reach the sandbox's server. A socket file left by a run that is gone is
// replaced.
func listenUnix(sock string) (net.Listener, error) {
	lock, err := os.OpenFile(sock+".lock", os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil // another run serves it
		}
		return nil, err
	}
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		lock.Close()
		return nil, err
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return lockedListener{l, lock}, nil
}

// lockedListener keeps the lock of a listen socket open, so held, for as
// long as the listener serves.
type lockedListener struct {
	net.Listener
	lock *os.File
}

func (l lockedListener) Close() error {
	err := l.Listener.Close()
	l.lock.Close()
	return err
}

func accept(l net.Listener, handle func(net.Conn)) {
	if l == nil {
		return
	}
	for {
		c, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go handle(c)
	}
}

// socksConnectLoopback asks the engine's proxy, in SOCKS5, for the host's
// 127.0.0.1:q; the proxy applies the sandbox's loopback rule.
func socksConnectLoopback(c net.Conn, q int) error {
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	defer c.SetDeadline(time.Time{})
	req := []byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 0}
	binary.BigEndian.PutUint16(req[11:], uint16(q))
	if _, err := c.Write(req); err != nil {
		return err
	}
	var resp [12]byte
	if _, err := io.ReadFull(c, resp[:]); err != nil {
		return err
	}
	if resp[0] != 5 || resp[1] != 0 || resp[3] != 0 {
		return errors.New("refused")
	}
	return nil
}

// execCommand replaces the forwarder with argv when it has nothing to
// forward (the guard, loaded, stays with it; with a terminal the command
// is then the session's leader and gets the signals sent to it); it
// returns only when that fails.
func execCommand(argv []string, stderr io.Writer) int {
	path, code := lookCommand(argv[0], stderr)
	if code != 0 {
		return code
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(stderr, "senclaw-netfwd: %s: %v\n", argv[0], err)
	return 126
}

// lookCommand finds the command name as a shell would, and when it
// cannot says so as a shell does: 127 when it is not there, 126 when it
// is there and cannot be executed.
func lookCommand(name string, stderr io.Writer) (string, int) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, 0
	}
	if strings.Contains(name, "/") {
		if fi, serr := os.Stat(name); serr == nil && !fi.IsDir() {
			fmt.Fprintf(stderr, "senclaw: not executable in the sandbox: %s\n", name)
			return "", 126
		}
	}
	fmt.Fprintf(stderr, "senclaw: not found in the sandbox: %s\n", name)
	return "", 127
}

// runChild runs argv and returns its exit code, re-raising a fatal signal.
// With a terminal, the command gets a process group of its own in the
// terminal's foreground, so the terminal's signals reach it (and not the
// forwarder, which passes on only the signals sent to it).
func runChild(argv []string, terminal bool, stderr io.Writer) int {
	return runChildThen(argv, terminal, stderr, func(int) {}, func() {})
}

// runChildThen is runChild, calling started with the command's pid, and
// after once the command ended and before the forwarder passes its end
// on.
func runChildThen(argv []string, terminal bool, stderr io.Writer, started func(pid int), after func()) int {
	path, code := lookCommand(argv[0], stderr)
	if code != 0 {
		after()
		return code
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	// The command dies with the forwarder, whatever kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if terminal {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = terminalFD()
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "senclaw-netfwd: %s: %v\n", argv[0], err)
		after()
		return 126
	}
	started(cmd.Process.Pid)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	after()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
		time.Sleep(100 * time.Millisecond) // the signal is on its way
		return 128 + int(sig)
	}
	return ws.ExitStatus()
}
