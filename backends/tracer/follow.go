package tracer

import (
	"bufio"
	"errors"
	"io"

	"github.com/senclaw/sandbox/backends"
)

// maxLine bounds one line of strace output; longer lines (a giant argv)
// are skipped, and reading goes on.
const maxLine = 1 << 20

// Follow reads strace output from r until EOF and calls emit with the
// run's own events. The launch is noise and is dropped: every line before
// the command's own execve (skipExecs successful execve calls are the
// launchers', such as setpriv and bwrap), and every later line of a
// process that was already there before it (bwrap and its pid-1 reaper).
// Follow always reads r to the end, so strace never blocks on a full pipe.
func Follow(r io.Reader, skipExecs int, emit func(backends.TraceEvent)) error {
	return follow(r, skipExecs, emit, nil)
}

// follow is Follow that also calls root with the pid of the first line:
// the first process strace traces is the one it started.
func follow(r io.Reader, skipExecs int, emit func(backends.TraceEvent), root func(pid int)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var p Parser
	open := false
	launch := map[int]bool{}
	for {
		line, err := readLine(br)
		if root != nil {
			if pid, ok := linePid(line); ok {
				root(pid)
				root = nil
			}
		}
		if len(line) > 0 {
			c, ok := p.Line(line)
			switch {
			case !ok:
			case !open:
				launch[c.Pid] = true
				if (c.Name == "execve" || c.Name == "execveat") && c.OK() {
					if skipExecs > 0 {
						skipExecs--
						break
					}
					open = true
					delete(launch, c.Pid)
					if ev, ok := Classify(&c); ok {
						emit(ev)
					}
				}
			case !launch[c.Pid]:
				if ev, ok := Classify(&c); ok {
					emit(ev)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			_, _ = io.Copy(io.Discard, br)
			return err
		}
	}
}

// readLine returns the next line without its newline; a line longer than
// maxLine comes back empty (its text is discarded).
func readLine(br *bufio.Reader) (string, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, isPrefix, err := br.ReadLine()
		if !tooLong {
			buf = append(buf, chunk...)
			if len(buf) > maxLine {
				tooLong, buf = true, nil
			}
		}
		if err != nil || !isPrefix {
			if tooLong {
				return "", err
			}
			return string(buf), err
		}
	}
}
