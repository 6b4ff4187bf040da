package tracer

import (
	"strconv"
	"strings"
)

// Call is one finished system call as strace printed it.
type Call struct {
	Pid    int
	TimeMs int64
	Name   string
	// Args are the top-level arguments, as printed (strings still quoted).
	Args []string
	// Ret is the return value as printed ("0", "3</etc/passwd>", "-1").
	Ret string
	// Errno is the error name of a failed call ("ENOENT"), or "".
	Errno string
}

// OK reports whether the call succeeded.
func (c *Call) OK() bool { return c.Errno == "" && c.Ret != "" && c.Ret[0] != '?' && c.Ret[0] != '-' }

// RetPath is the path strace's -y printed after a returned descriptor
// ("3</etc/passwd>" gives "/etc/passwd"), or "".
func (c *Call) RetPath() string {
	i := strings.IndexByte(c.Ret, '<')
	if i < 0 || !strings.HasSuffix(c.Ret, ">") {
		return ""
	}
	return devSuffix(unescape(c.Ret[i+1 : len(c.Ret)-1]))
}

// devSuffix drops the device numbers -yy adds to device files
// ("/dev/null<char 1:3>").
func devSuffix(p string) string {
	if strings.HasSuffix(p, ">") {
		for _, kind := range []string{"<char ", "<block "} {
			if i := strings.LastIndex(p, kind); i > 0 {
				return p[:i]
			}
		}
	}
	return p
}

// Parser reads strace -f -ttt output line by line and pairs the
// "<unfinished ...>" halves of calls with their "<... resumed>" rests.
// The zero value is ready to use.
type Parser struct {
	pending      map[int]pendingCall
	pendingBytes int
	// tookOver is the last "superseded by execve" note not yet asked
	// about (TookOver): leader and the thread whose execve it took.
	tookOver [2]int
}

// maxPendingBytes bounds the unfinished halves a Parser keeps. A process
// that dies inside a call never resumes it (-qq prints no exit lines), so
// without a bound the halves of dead processes would pile up.
const maxPendingBytes = 32 << 20

type pendingCall struct {
	timeMs int64
	head   string
	// tookOver marks an execve whose thread's pid changed: it succeeded
	// (the kernel takes over the leader's pid only past the point of no
	// return), whatever strace prints as its result (strace 6.1 prints a
	// garbage errno).
	tookOver bool
}

const (
	unfinished = " <unfinished ...>"
	resumed    = " resumed>"
	superseded = "+++ superseded by execve in pid "
	pidChanged = " <pid changed to "
)

// TookOver reports, once, the last execve by a thread other than its
// process's leader: from the line read last, the process's calls come
// under leader's pid instead of thread's (a Go program, such as the
// engine's forwarder, execs from any of its threads).
func (p *Parser) TookOver() (leader, thread int, ok bool) {
	t := p.tookOver
	p.tookOver = [2]int{}
	return t[0], t[1], t[0] > 0
}

// linePid reads the pid that begins a line of strace -f output.
func linePid(line string) (int, bool) {
	pidText, _, ok := strings.Cut(strings.TrimLeft(line, " "), " ")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(pidText, "[pid"))
	return pid, err == nil && pid > 0
}

// lineTime reads the time that follows the pid on a line of strace -f
// -ttt output, or 0.
func lineTime(line string) int64 {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return 0
	}
	ms, _ := parseTime(fields[1])
	return ms
}

// Line parses one line. It returns false for lines that are not a whole
// call: the first half of an unfinished call, exit and signal notes, and
// anything it cannot read.
func (p *Parser) Line(line string) (Call, bool) {
	pid, ok := linePid(line)
	if !ok {
		return Call{}, false
	}
	_, rest, _ := strings.Cut(strings.TrimLeft(line, " "), " ")
	rest = strings.TrimLeft(rest, " ")
	tsText, body, ok := strings.Cut(rest, " ")
	if !ok {
		return Call{}, false
	}
	timeMs, ok := parseTime(tsText)
	if !ok {
		return Call{}, false
	}
	switch {
	case strings.HasPrefix(body, superseded):
		// A thread other than the leader called execve: the process goes
		// on as the leader's pid, and strace resumes the call there.
		thread, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(body, superseded), " +++"))
		if err != nil || thread <= 0 {
			return Call{}, false
		}
		if pc, found := p.pending[thread]; found {
			p.drop(thread)
			pc.tookOver = true
			p.keep(pid, pc)
		}
		p.tookOver = [2]int{pid, thread}
		return Call{}, false
	case strings.HasSuffix(body, " ...>") && strings.Contains(body, pidChanged):
		// The same, as strace 6 prints it: the thread's half ends with
		// "<pid changed to LEADER ...>", resumed under the leader's pid.
		i := strings.LastIndex(body, pidChanged)
		leader, err := strconv.Atoi(strings.TrimSuffix(body[i+len(pidChanged):], " ...>"))
		if err != nil || leader <= 0 {
			return Call{}, false
		}
		p.keep(leader, pendingCall{timeMs, body[:i], true})
		p.tookOver = [2]int{leader, pid}
		return Call{}, false
	case strings.HasPrefix(body, "+++") || strings.HasPrefix(body, "---"):
		return Call{}, false
	case strings.HasSuffix(body, unfinished):
		p.keep(pid, pendingCall{timeMs: timeMs, head: strings.TrimSuffix(body, unfinished)})
		return Call{}, false
	case strings.HasPrefix(body, "<... "):
		i := strings.Index(body, resumed)
		pc, found := p.pending[pid]
		if i < 0 || !found {
			return Call{}, false
		}
		p.drop(pid)
		body = pc.head + body[i+len(resumed):]
		timeMs = pc.timeMs
		if pc.tookOver {
			c, ok := parseCall(body)
			c.Pid, c.TimeMs, c.Ret, c.Errno = pid, timeMs, "0", ""
			return c, ok
		}
	}
	c, ok := parseCall(body)
	c.Pid, c.TimeMs = pid, timeMs
	return c, ok
}

// keep holds the first half of pid's unfinished call, dropping others
// (any, the map decides) while the halves are over maxPendingBytes: their
// calls will be missing from the trace, and memory stays bounded.
func (p *Parser) keep(pid int, pc pendingCall) {
	if p.pending == nil {
		p.pending = map[int]pendingCall{}
	}
	p.drop(pid)
	for other := range p.pending {
		if p.pendingBytes+len(pc.head) <= maxPendingBytes {
			break
		}
		p.drop(other)
	}
	p.pending[pid] = pc
	p.pendingBytes += len(pc.head)
}

func (p *Parser) drop(pid int) {
	if pc, ok := p.pending[pid]; ok {
		p.pendingBytes -= len(pc.head)
		delete(p.pending, pid)
	}
}

// parseTime reads -ttt's "1700000000.123456" as milliseconds.
func parseTime(s string) (int64, bool) {
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, false
	}
	ms := n * 1000
	if len(frac) >= 3 {
		f, err := strconv.ParseInt(frac[:3], 10, 64)
		if err != nil {
			return 0, false
		}
		ms += f
	}
	return ms, true
}

// parseCall reads `name(arg, arg) = ret [ERRNO (text)]`.
func parseCall(s string) (Call, bool) {
	open := strings.IndexByte(s, '(')
	if open <= 0 {
		return Call{}, false
	}
	c := Call{Name: s[:open]}
	end := matchingParen(s, open)
	if end < 0 {
		return Call{}, false
	}
	c.Args = splitArgs(s[open+1 : end])
	after := strings.TrimLeft(s[end+1:], " ")
	ret, ok := strings.CutPrefix(after, "= ")
	if !ok {
		return Call{}, false
	}
	ret = strings.TrimSpace(ret)
	if first, more, _ := strings.Cut(ret, " "); first == "-1" || first == "?" {
		c.Ret = first
		if e, _, _ := strings.Cut(more, " "); strings.HasPrefix(e, "E") {
			c.Errno = e
		}
		return c, true
	}
	c.Ret = ret
	return c, true
}
