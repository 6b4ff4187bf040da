package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/app/rundir"
)

// DaemonOptions configure Serve.
type DaemonOptions struct {
	// RuntimeDir holds the socket, the lock and the daemon info file.
	RuntimeDir string
	// Lock is the daemon lock the caller took (AcquireLock): Serve works
	// in the runtime dir it holds open. Nil: Serve opens RuntimeDir
	// itself, with the same checks.
	Lock *Lock
	// Listen is the TCP address for the browser dashboard ("" = none).
	Listen string
	// FallbackListen is used when Listen is already taken by another
	// program of this user (a second engine of theirs), and the note says
	// which; "" makes a taken port an error. A port another user holds is
	// never fallen back from: see WithoutTCPIfSquatted.
	FallbackListen string
	// WithoutTCPIfSquatted serves the socket alone when another user
	// holds Listen (the desktop app, whose window needs no TCP), with a
	// note saying so; otherwise Serve refuses to start (*PortTakenError).
	WithoutTCPIfSquatted bool
	// LAN is the LAN listener's address (ADDR:PORT; "" none): the API
	// and /mcp over TLS only, to agent and tenant tokens only (lan.go).
	LAN string
	// TLSCert and TLSKey are the LAN listener's certificate and key, the
	// owner's; empty: the one the engine makes and keeps in LANDir (the
	// config dir).
	TLSCert, TLSKey string
	LANDir          string
	// Ready is called once the listeners are up, with the dashboard URL.
	Ready func(info DaemonInfo)
}

// ErrAlreadyRunning is returned by Serve when another daemon of this user
// holds the lock.
type ErrAlreadyRunning struct{ Info DaemonInfo }

func (e *ErrAlreadyRunning) Error() string {
	where := e.Info.Socket
	if e.Info.URL != "" {
		where = e.Info.URL + " and " + where
	}
	if e.Info.Pid == 0 {
		// Its info file is not there: it did not get that far in lockWait.
		return "senclaw is already running here, starting or stopping (it did not say where it listens within " + lockWait.String() + "); try again, or stop it with `senclaw stop`"
	}
	return fmt.Sprintf("senclaw is already running (pid %d) at %s; stop it with `senclaw stop`", e.Info.Pid, where)
}

func readInfo(dir *rundir.Dir) (DaemonInfo, error) {
	var info DaemonInfo
	data, err := dir.ReadFile(apitype.InfoFile, apitype.MaxInfo, "daemon's info file")
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(data, &info)
}

// Lock is the per-user daemon lock, and the runtime dir it is in, held
// open.
type Lock struct {
	dir     *rundir.Dir
	release func()
}

// Release gives the lock up.
func (l *Lock) Release() {
	l.release()
	l.dir.Close()
}

// AcquireLock makes (or checks) the runtime dir and takes the per-user
// daemon lock in it, before the engine opens its store: a second daemon
// says where the first one is. A runtime dir that is not this user's own
// folder, closed to others, is refused (*rundir.UnsafeError).
func AcquireLock(runtimeDir string) (*Lock, error) {
	dir, err := rundir.Open(runtimeDir)
	if err != nil {
		return nil, err
	}
	unlock, err := dir.Lock()
	// A daemon that holds the lock but has no info file is stopping (it
	// removes the file first, the lock last: `senclaw stop && senclaw
	// run`) or still starting: wait for it to let go, or to be up and say
	// where it is.
	for deadline := time.Now().Add(lockWait); errors.Is(err, rundir.ErrLocked) && time.Now().Before(deadline); {
		if _, ierr := readInfo(dir); ierr == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
		unlock, err = dir.Lock()
	}
	if err != nil {
		if errors.Is(err, rundir.ErrLocked) {
			info, _ := readInfo(dir)
			dir.Close()
			return nil, &ErrAlreadyRunning{Info: info}
		}
		dir.Close()
		return nil, err
	}
	return &Lock{dir: dir, release: unlock}, nil
}

// lockWait bounds how long a new daemon waits for another one of this
// user to let go of the lock, or to say where it is.
const lockWait = 10 * time.Second

// Serve runs the daemon until ctx ends: the API on a 0600 Unix socket and,
// if asked, on a loopback TCP address. The caller holds the daemon lock
// (AcquireLock). It shuts down gracefully and returns nil on ctx's end.
func (s *Server) Serve(ctx context.Context, o DaemonOptions) error {
	var dir *rundir.Dir
	if o.Lock != nil {
		dir = o.Lock.dir
	} else {
		var err error
		if dir, err = rundir.Open(o.RuntimeDir); err != nil {
			return err
		}
		defer dir.Close()
	}
	sock := apitype.SocketPath(dir.Path)
	// The socket is bound under a name of its own and renamed into place
	// once info.json is written: a client that finds api.sock finds the
	// daemon's info too (`senclaw serve & senclaw mcp-config`). We hold
	// the lock, so a stale api.sock is no daemon's and is replaced.
	bound := "." + filepath.Base(sock) + ".new"
	ul, err := dir.Listen(bound)
	if err != nil {
		return err
	}
	defer dir.Remove(bound)
	defer dir.Remove(filepath.Base(sock))
	servers := []*http.Server{s.httpServer("socket", nil)}
	listeners := []net.Listener{peerChecked(ul)}
	info := DaemonInfo{Pid: os.Getpid(), Socket: sock}

	if o.Listen != "" {
		tl, url, note, err := s.listenDashboard(o)
		if err != nil {
			ul.Close()
			return err
		}
		if tl != nil {
			servers = append(servers, s.httpServer("tcp", allowedHosts(tl.Addr())))
			listeners = append(listeners, tl)
			info.URL = url
		}
		info.Note = note
	}
	if o.LAN != "" {
		ll, lan, err := s.listenLAN(o)
		if err != nil {
			ul.Close()
			for _, l := range listeners[1:] {
				l.Close()
			}
			return err
		}
		servers = append(servers, s.httpServer("lan", nil))
		listeners = append(listeners, ll)
		info.LAN = &lan
		s.lanInfo.Store(&lan)
		s.log.Info("The LAN listener is on: agent and tenant tokens only, over TLS.", "url", lan.URL, "fingerprint", lan.Fingerprint)
	}
	if data, err := json.Marshal(info); err == nil {
		if err := dir.WriteFile(apitype.InfoFile, data); err != nil {
			s.log.Warn("The daemon could not write its info file; clients find its socket, but not its URL.", "err", err)
		}
	}
	defer dir.Remove(apitype.InfoFile)
	if err := dir.Rename(bound, filepath.Base(sock)); err != nil {
		ul.Close()
		return fmt.Errorf("publishing the daemon's socket: %w", err)
	}
	s.pages.serve(dir, info.URL)
	defer s.pages.stop()

	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() {
			if err := srv.Serve(listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	s.log.Info("The daemon is listening.", "socket", sock, "url", info.URL)
	if o.Ready != nil {
		o.Ready(info)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	return serveErr
}

func (s *Server) httpServer(kind string, hosts []string) *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return WithTransport(ctx, kind, hosts)
		},
		ErrorLog: nil,
	}
}

// listenTCP opens the dashboard listener: loopback only. Other machines
// reach the engine through the LAN listener alone (--lan), which takes
// neither the owner's token nor the dashboard's login.
func listenTCP(o DaemonOptions) (net.Listener, string, error) {
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("--listen %q: use HOST:PORT, e.g. 127.0.0.1:7878", o.Listen)
	}
	ip := net.ParseIP(host)
	if loopback := host == "localhost" || (ip != nil && ip.IsLoopback()); !loopback {
		return nil, "", fmt.Errorf("--listen %q is not a loopback address: the dashboard and the owner's token are for this machine alone; for other machines use --lan ADDR:PORT, which serves the API and /mcp over TLS to agent and tenant tokens only", o.Listen)
	}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	return l, "http://" + l.Addr().String(), nil
}
