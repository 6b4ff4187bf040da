package api

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DaemonOptions configure Serve.
type DaemonOptions struct {
	// RuntimeDir holds the socket, the lock and the daemon info file.
	RuntimeDir string
	// Listen is the TCP address for the browser dashboard ("" = none).
	Listen string
	// FallbackListen is used when Listen is already taken (the default
	// port held by another program); "" makes a taken port an error.
	FallbackListen string
	// AllowRemote permits a non-loopback Listen address, and then only
	// with TLS (TLSCert and TLSKey).
	AllowRemote     bool
	TLSCert, TLSKey string
	// Ready is called once the listeners are up, with the dashboard URL.
	Ready func(info DaemonInfo)
}

// DaemonInfo is what a running daemon tells the others (in info.json).
type DaemonInfo struct {
	Pid    int    `json:"pid"`
	Socket string `json:"socket"`
	URL    string `json:"url,omitempty"`
}

// SocketPath is where the API socket of runtimeDir is.
func SocketPath(runtimeDir string) string { return filepath.Join(runtimeDir, "api.sock") }

// ErrAlreadyRunning is returned by Serve when another daemon of this user
// holds the lock.
type ErrAlreadyRunning struct{ Info DaemonInfo }

func (e *ErrAlreadyRunning) Error() string {
	where := e.Info.Socket
	if e.Info.URL != "" {
		where = e.Info.URL + " and " + where
	}
	return fmt.Sprintf("senclaw is already running (pid %d) at %s; stop it with `senclaw stop`", e.Info.Pid, where)
}

// ReadDaemonInfo reads the info file of a running daemon.
func ReadDaemonInfo(runtimeDir string) (DaemonInfo, error) {
	var info DaemonInfo
	data, err := os.ReadFile(filepath.Join(runtimeDir, "info.json"))
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(data, &info)
}

// Lock is the per-user daemon lock.
type Lock struct{ release func() }

// Release gives the lock up.
func (l *Lock) Release() { l.release() }

// AcquireLock takes the per-user daemon lock in runtimeDir, before the
// engine opens its store: a second daemon says where the first one is.
func AcquireLock(runtimeDir string) (*Lock, error) {
	if err := os.MkdirAll(runtimeDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the runtime dir: %w", err)
	}
	if err := os.Chmod(runtimeDir, 0o700); err != nil {
		return nil, fmt.Errorf("securing the runtime dir: %w", err)
	}
	unlock, err := lockRuntime(runtimeDir)
	if err != nil {
		if errors.Is(err, errLocked) {
			info, _ := ReadDaemonInfo(runtimeDir)
			return nil, &ErrAlreadyRunning{Info: info}
		}
		return nil, err
	}
	return &Lock{release: unlock}, nil
}

// Serve runs the daemon until ctx ends: the API on a 0600 Unix socket and,
// if asked, on a loopback TCP address. The caller holds the daemon lock
// (AcquireLock). It shuts down gracefully and returns nil on ctx's end.
func (s *Server) Serve(ctx context.Context, o DaemonOptions) error {
	sock := SocketPath(o.RuntimeDir)
	_ = os.Remove(sock) // stale: we hold the lock, so no daemon uses it
	ul, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", sock, err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ul.Close()
		return fmt.Errorf("securing %s: %w", sock, err)
	}
	servers := []*http.Server{s.httpServer("socket", nil)}
	listeners := []net.Listener{peerChecked(ul)}
	info := DaemonInfo{Pid: os.Getpid(), Socket: sock}

	if o.Listen != "" {
		tl, url, err := listenTCP(o)
		if err != nil && o.FallbackListen != "" && errors.Is(err, syscall.EADDRINUSE) {
			s.log.Warn("The dashboard port is taken; listening on another one.", "wanted", o.Listen, "err", err)
			o.Listen = o.FallbackListen
			tl, url, err = listenTCP(o)
		}
		if err != nil {
			ul.Close()
			return err
		}
		servers = append(servers, s.httpServer("tcp", allowedHosts(tl.Addr())))
		listeners = append(listeners, tl)
		info.URL = url
	}
	if data, err := json.Marshal(info); err == nil {
		_ = os.WriteFile(filepath.Join(o.RuntimeDir, "info.json"), data, 0o600)
	}
	defer os.Remove(filepath.Join(o.RuntimeDir, "info.json"))
	defer os.Remove(sock)

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

// listenTCP opens the dashboard listener: loopback only, unless remote
// access was asked for explicitly, and then only with TLS.
func listenTCP(o DaemonOptions) (net.Listener, string, error) {
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("--listen %q: use HOST:PORT, e.g. 127.0.0.1:7878", o.Listen)
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback {
		if !o.AllowRemote {
			return nil, "", fmt.Errorf("--listen %q is not a loopback address: the API would be reachable from other machines; add --allow-remote (with --tls-cert and --tls-key) if you mean it", o.Listen)
		}
		if o.TLSCert == "" || o.TLSKey == "" {
			return nil, "", fmt.Errorf("--allow-remote needs --tls-cert and --tls-key: the API token must not cross a network in clear text")
		}
	}
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	scheme := "http"
	if !loopback {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			l.Close()
			return nil, "", fmt.Errorf("loading the TLS key pair: %w", err)
		}
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	return l, scheme + "://" + l.Addr().String(), nil
}

// LoadOrCreateToken reads the API token at path, creating a random one
// (0600, in a 0700 dir) the first time.
func LoadOrCreateToken(path string) (string, error) {
	if data, err := os.ReadFile(path); err == nil {
		if tok := strings.TrimSpace(string(data)); len(tok) >= 32 {
			return tok, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	tok := RandomToken()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("writing the API token: %w", err)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return "", err
	}
	if _, err := io.WriteString(f, tok+"\n"); err != nil {
		return "", err
	}
	return tok, nil
}
