package tracer

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/senclaw/sandbox/backends"
)

// MaxLine bounds one line of strace output. strace prints at most -s
// (StringSize) elements of an argv, each of at most -s bytes, four
// characters per escaped byte: its longest lines stay under 4.2 MiB. A
// longer line is skipped with a trace.incomplete marker, and reading goes
// on.
const MaxLine = 8 << 20

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
		line, tooLong, err := ReadLine(br, MaxLine)
		if root != nil {
			if pid, ok := linePid(line); ok {
				root(pid)
				root = nil
			}
		}
		if tooLong {
			ev := backends.TraceEvent{Kind: KindIncomplete, Target: "strace", Source: SourceStrace,
				Detail: fmt.Sprintf("a line of strace's output was longer than %d MiB and was skipped: a system call is missing from the trace", MaxLine>>20)}
			ev.Pid, _ = linePid(line)
			ev.TimeMs = lineTime(line)
			emit(ev)
			line = "" // only its first bytes are here: not a call
		}
		if len(line) > 0 {
			c, ok := p.Line(line)
			if leader, thread, took := p.TookOver(); took && open {
				// The process thread was goes on as leader: it is the
				// launch's when thread was (before the command's execve,
				// every process is, and stays so until its exec opens).
				if launch[thread] {
					launch[leader] = true
				} else {
					delete(launch, leader)
				}
			}
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

// ReadLine returns the next line of br without its newline. A line longer
// than max is not kept: tooLong is set and line holds its first bytes
// only (up to 256), so that memory stays bounded whatever the writer sends.
func ReadLine(br *bufio.Reader, max int) (line string, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if !tooLong {
			buf = append(buf, chunk...)
			if len(buf) > max {
				tooLong, buf = true, append([]byte(nil), buf[:min(max, 256)]...)
			}
		}
		if err != nil || !isPrefix {
			return string(buf), tooLong, err
		}
	}
}
