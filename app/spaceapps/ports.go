package spaceapps

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/senclaw/sandbox/app/apitype"
	"github.com/senclaw/sandbox/monitor"
)

// portConflict is an app's port held by a process the engine did not
// start. The engine never kills such a process.
type portConflict struct {
	port   int
	holder monitor.Holder
	// outside: the holder runs from the app's own directory, so the app
	// runs outside the engine.
	outside bool
	// otherApp is the Space App of this engine that holds the port.
	otherApp string
}

func (c *portConflict) Error() string {
	who := "an unknown process (another user's, which cannot be read)"
	if c.holder.Pid > 0 {
		who = fmt.Sprintf("PID %d (%s)", c.holder.Pid, oneLine(c.holder.Command, 120))
	}
	switch {
	case c.otherApp != "":
		return fmt.Sprintf("port taken by Space App %s: port %d is already its port; give one of them another runtime.port (or 0 for any free port)", c.otherApp, c.port)
	case c.outside:
		return fmt.Sprintf("running outside the engine: port %d is held by %s, which runs from the app's own directory; the engine never kills what it did not start: stop it, then start the app here", c.port, who)
	}
	return fmt.Sprintf("port taken by %s: port %d is held by a process the engine did not start, which it leaves alone; stop it, or give the app another runtime.port (0 lets the engine pick a free one)", who, c.port)
}

// portFor returns the port app a serves on this launch: its manifest's,
// or for port 0 the one it had (a new free one if that is taken). A port
// held by someone else is a *portConflict.
func (s *Supervisor) portFor(ctx context.Context, a *appState) (int, error) {
	a.mu.Lock()
	want, port, dir, source, inPlace := a.rec.Manifest.Runtime.Port, a.rec.Port, a.rec.Dir, a.rec.Source, a.rec.InPlace
	a.mu.Unlock()
	if want != 0 {
		port = want
	}
	for attempt := 0; port != 0; attempt++ {
		if portFree(port) {
			break
		}
		h, ok, err := monitor.PortHolder(ctx, port)
		if err != nil {
			return 0, fmt.Errorf("finding who holds port %d: %w", port, err)
		}
		switch {
		case ok && h.Pid == os.Getpid():
			// The engine's own listener: another app's forward, or this
			// app's previous one still closing.
			if other := s.appOnPort(a.id, port); other != "" {
				return 0, &portConflict{port: port, holder: h, otherApp: other}
			}
		case ok && fromDir(h, dir, source, inPlace):
			return 0, &portConflict{port: port, holder: h, outside: true}
		case ok && want == 0:
			port = 0 // any free port will do
			continue
		case ok, attempt >= 20:
			return 0, &portConflict{port: port, holder: h}
		}
		if attempt >= 20 {
			return 0, &portConflict{port: port, holder: h}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return 0, err
		}
	}
	a.mu.Lock()
	if a.rec.Port != port {
		a.rec.Port = port
		_ = s.save(a)
	}
	a.mu.Unlock()
	return port, nil
}

// appOnPort names another app of this supervisor that runs on port.
func (s *Supervisor) appOnPort(self string, port int) string {
	s.mu.Lock()
	all := s.list()
	s.mu.Unlock()
	for _, o := range all {
		if o.id == self {
			continue
		}
		o.mu.Lock()
		p, running := o.rec.Port, o.running()
		o.mu.Unlock()
		if running && p == port {
			return o.id
		}
	}
	return ""
}

// fromDir reports whether h runs from the app's directory (or, for a copy,
// the folder it was copied from).
// portHolder is h as the API shows it.
func portHolder(h *monitor.Holder) *apitype.PortHolder {
	if h == nil {
		return nil
	}
	return &apitype.PortHolder{Pid: h.Pid, Command: h.Command, Cwd: h.Cwd, Exe: h.Exe}
}

func fromDir(h monitor.Holder, dir, source string, inPlace bool) bool {
	dirs := []string{dir}
	if !inPlace && filepath.IsAbs(source) {
		dirs = append(dirs, source)
	}
	for _, d := range dirs {
		for _, p := range []string{h.Cwd, h.Exe} {
			if p != "" && (p == d || strings.HasPrefix(p, d+string(filepath.Separator))) {
				return true
			}
		}
	}
	return false
}

// portFree reports whether 127.0.0.1:port can be bound now. A listener on
// the wildcard address or a dual-stack [::] takes it too.
func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// freePort picks a free port (1024 and up) on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// oneLine keeps a text from elsewhere (another process's command line, an
// app's command) to one line of at most n runes with no control or
// bidirectional-override character.
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
