package app

import (
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// Attachment connects a foreground run to a caller that stays attached
// while it runs (senclaw agent-shell; later an interactive shell in a
// sandbox): the command's standard input, a terminal, and the caller's
// resizes and signals. The faces carry it over their own channel (frames
// of app/attach over an upgraded HTTP connection); the engine reads no
// socket itself.
type Attachment struct {
	// Stdin feeds the command's standard input; its EOF closes it. Nil:
	// the command reads /dev/null.
	Stdin io.Reader
	// Terminal, when set, asks for a pseudo-terminal (see TerminalRequest).
	// A backend that cannot give one runs the command with pipes, and the
	// record says so (Terminal false, a line in Missing).
	Terminal *TerminalRequest
	// Control carries the caller's resizes and signals while the run goes
	// on; nil when there are none.
	Control <-chan Control
	// Started, when set, is called once the command has started, with its
	// record so far (isolation, terminal), before the run ends.
	Started func(RunRecord)
	// Interactive says a person is at the other end (senclaw shell): the
	// run has no deadline unless the request gives timeoutMs, and ends
	// when it exits or the caller goes away. The record says so.
	Interactive bool
}

// Signals are the signals an attached caller may pass to its command.
var Signals = map[string]syscall.Signal{
	"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT,
}

// checkTerminal validates a terminal request and returns it with its
// descriptors sorted.
func checkTerminal(t *TerminalRequest) (*TerminalRequest, error) {
	if t == nil {
		return nil, nil
	}
	if t.Cols == 0 || t.Rows == 0 || t.Cols > 10000 || t.Rows > 10000 {
		return nil, badField("terminal", []uint16{t.Cols, t.Rows}, "the size must be 1 to 10000 columns and rows")
	}
	fds := slices.Clone(t.FDs)
	slices.Sort(fds)
	fds = slices.Compact(fds)
	for _, fd := range fds {
		if fd < 0 || fd > 2 {
			return nil, badField("terminal.fds", t.FDs, "lists standard descriptors: 0, 1 and 2")
		}
	}
	if !slices.Contains(fds, 1) && !slices.Contains(fds, 2) {
		return nil, badField("terminal.fds", t.FDs, "must name stdout (1) or stderr (2): a terminal is for output the caller shows")
	}
	return &TerminalRequest{Cols: t.Cols, Rows: t.Rows, FDs: fds}, nil
}

// attached is the engine's side of one attached run: the pipes or the
// terminal it set up, and the goroutines that copy and pass on.
type attached struct {
	a      *Attachment
	master *os.File // the terminal's master, or nil
	slave  *os.File // the terminal's slave until Start has it
	stdinR *os.File // the stdin pipe's read end until Start has it
	stdinW *os.File
	copied chan struct{} // closed when the terminal's output is all read
	// begun is closed once the caller heard that the run started (its
	// record says whether it got the terminal): the terminal's output
	// follows that, so a caller can put its own terminal raw first.
	begun     chan struct{}
	beginOnce sync.Once
	stop      chan struct{}
	once      sync.Once
}

// attach sets up what p's attachment asks for in spec, before Start. A
// terminal the backend cannot give is noted in rec and replaced by pipes.
func (e *Engine) attach(p *plan, backend backends.Backend, spec *backends.Spec, rec *RunRecord, stdout, stderr io.Writer) (*attached, error) {
	a := p.req.Attach
	if a == nil {
		return nil, nil
	}
	at := &attached{a: a, stop: make(chan struct{}), begun: make(chan struct{})}
	rec.Interactive = a.Interactive
	if t := a.Terminal; t != nil {
		switch why := e.noTerminal(backend, spec); {
		case why != "":
			rec.Missing = append(rec.Missing, "terminal: "+why+"; the command runs with pipes")
		default:
			master, slave, err := openTerminal(t.Cols, t.Rows)
			if err != nil {
				return nil, err
			}
			at.master, at.slave = master, slave
			spec.Terminal, spec.TerminalFDs, spec.Helper = slave, t.FDs, e.opts.Forwarder
			rec.Terminal = true
			out := stdout
			if !slices.Contains(t.FDs, 1) {
				out = stderr
			}
			at.copied = make(chan struct{})
			go func() {
				defer close(at.copied)
				select {
				case <-at.begun:
				case <-at.stop: // it did not start: what it wrote is read still
				}
				_, _ = io.Copy(out, terminalReader{master})
			}()
		}
	}
	if a.Stdin == nil {
		return at, nil
	}
	if rec.Terminal && slices.Contains(a.Terminal.FDs, 0) {
		spec.Stdin = nil
		go func() { _, _ = io.Copy(at.master, a.Stdin) }()
		return at, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		at.release()
		return nil, err
	}
	at.stdinR, at.stdinW = r, w
	spec.Stdin = r
	go func() {
		_, _ = io.Copy(w, a.Stdin)
		w.Close() // the caller's EOF is the command's
	}()
	return at, nil
}

// noTerminal says why backend cannot give spec a terminal, "" when it can.
func (e *Engine) noTerminal(backend backends.Backend, spec *backends.Spec) string {
	t, ok := backend.(backends.Terminals)
	switch {
	case !terminalsHere:
		return "this engine opens terminals on Linux only"
	case !ok || !t.GivesTerminals():
		return "the " + backend.Name() + " backend gives no terminal"
	case backend.Name() == "bwrap" && spec.Net == nil && e.opts.Forwarder == "":
		return "bwrap needs the senclaw-netfwd helper for a terminal (keep it next to senclaw)"
	}
	return ""
}

// started runs once the process is up: the engine's copies of what the
// process now holds are closed (so the terminal's output ends when the
// process does), and the caller's controls are passed on.
func (at *attached) started(proc backends.Process, rec RunRecord) {
	if at == nil {
		return
	}
	if at.slave != nil {
		at.slave.Close()
		at.slave = nil
	}
	if at.stdinR != nil {
		at.stdinR.Close()
		at.stdinR = nil
	}
	if at.a.Started != nil {
		at.a.Started(rec)
	}
	at.beginOnce.Do(func() { close(at.begun) })
	if at.a.Control == nil {
		return
	}
	go func() {
		for {
			select {
			case <-at.stop:
				return
			case c, ok := <-at.a.Control:
				if !ok {
					return
				}
				at.control(proc, c)
			}
		}
	}()
}

func (at *attached) control(proc backends.Process, c Control) {
	if c.Cols > 0 && c.Rows > 0 && at.master != nil {
		cols, rows := min(c.Cols, 10000), min(c.Rows, 10000)
		_ = resizeTerminal(at.master, cols, rows)
		if r, ok := proc.(backends.Resizer); ok {
			_ = r.Resize(cols, rows)
		}
	}
	if sig, ok := Signals[c.Signal]; ok {
		if s, ok := proc.(backends.Signaler); ok {
			_ = s.Signal(sig)
		} else if sig == syscall.SIGINT || sig == syscall.SIGTERM || sig == syscall.SIGHUP {
			// A backend that cannot pass a signal ends the run instead.
			_ = proc.Kill()
		}
	}
}

// finish runs once the process is gone: the terminal's last output is
// read (bounded: a process that escaped the tree with the terminal open
// does not hold the run), then everything is closed.
func (at *attached) finish() {
	if at == nil {
		return
	}
	at.once.Do(func() { close(at.stop) })
	if at.copied != nil {
		select {
		case <-at.copied:
		case <-time.After(2 * time.Second):
		}
	}
	at.release()
	if at.copied != nil {
		<-at.copied
	}
}

// release closes what is still open.
func (at *attached) release() {
	for _, f := range []*os.File{at.slave, at.stdinR, at.stdinW, at.master} {
		if f != nil {
			f.Close()
		}
	}
}

// terminalReader reads a terminal's master, taking EIO (every slave
// closed) for the end of the output it is.
type terminalReader struct{ f *os.File }

func (r terminalReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}
