package desktop

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ExitNoDisplay is the window process's exit code when GTK cannot open the
// display: the app then goes on without a window.
const ExitNoDisplay = 3

// WindowProcess runs the dashboard window as a child process of the app,
// started when the window is wanted and gone when it is closed. The
// engine and the tray stay in the main process, which never loads GTK or
// WebKit's state: a closed window gives back everything it held (the
// window, WebKit and Mesa cost well over 100 MiB; the tray a few).
type WindowProcess struct {
	// Command builds the command of a new window process; it is called
	// for each start.
	Command func() *exec.Cmd
	// Exited is called when a window process ends by itself (the person
	// closed the window, or it failed), not when Stop ended it. code is
	// its exit code (-1 when it died by a signal).
	Exited func(code int)
	Logger *slog.Logger

	mu      sync.Mutex
	cmd     *exec.Cmd
	show    *os.File      // the write end of the running window's show pipe
	done    chan struct{} // closed when cmd has exited
	stopped bool
}

// ShowFD is the descriptor on which a window process reads its show
// requests, one a line: an empty line asks it to come to the front, a
// line "#ANCHOR" to come to the front at that card of the dashboard; end
// of file means the app is gone. (A pipe, not a signal: WebKit's
// JavaScriptCore takes SIGUSR1 for its garbage collector in every process
// that loads it.)
const ShowFD = 3

// StopGrace is how long Stop waits for the window to close after SIGTERM
// before it kills it.
const StopGrace = 5 * time.Second

// Show starts the window process, or, when one runs, asks it (a line on
// its show pipe) to come to the front.
func (w *WindowProcess) Show() error { return w.request("\n") }

// ShowAt is Show at a card of the dashboard (anchor, e.g. "space-apps").
func (w *WindowProcess) ShowAt(anchor string) error {
	if anchor == "" || strings.ContainsAny(anchor, "\n\r") {
		return errors.New("ShowAt: a one-line anchor is needed")
	}
	return w.request("#" + anchor + "\n")
}

// request sends line to the window process, starting it first if none
// runs (the pipe keeps the line until the new window reads it).
func (w *WindowProcess) request(line string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return errors.New("the app is quitting")
	}
	if w.cmd != nil {
		_, err := io.WriteString(w.show, line)
		return err
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := w.Command()
	cmd.ExtraFiles = []*os.File{r} // ShowFD in the child
	err = cmd.Start()
	r.Close()
	if err != nil {
		pw.Close()
		return err
	}
	done := make(chan struct{})
	w.cmd, w.show, w.done = cmd, pw, done
	if line != "\n" {
		_, _ = io.WriteString(pw, line)
	}
	go func() {
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		w.mu.Lock()
		byStop := w.stopped
		if w.cmd == cmd {
			w.cmd, w.show = nil, nil
		}
		w.mu.Unlock()
		pw.Close()
		close(done)
		if !byStop {
			w.logger().Info("The window process ended.", "code", code, "err", err)
			if w.Exited != nil {
				w.Exited(code)
			}
		}
	}()
	return nil
}

// Running reports whether a window process runs, and its pid.
func (w *WindowProcess) Running() (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil {
		return 0, false
	}
	return w.cmd.Process.Pid, true
}

// Stop closes the window process (SIGTERM, then SIGKILL after StopGrace)
// and waits for it; no window starts after it. It is idempotent.
func (w *WindowProcess) Stop() {
	w.mu.Lock()
	w.stopped = true
	cmd, done := w.cmd, w.done
	w.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(StopGrace):
		w.logger().Warn("The window did not close within the grace time; killing it.", "pid", cmd.Process.Pid)
		_ = cmd.Process.Kill()
		<-done
	}
}

func (w *WindowProcess) logger() *slog.Logger {
	if w.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Logger
}
