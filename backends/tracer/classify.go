package tracer

import (
	"path"
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// deniedErrno reports whether errno is the sandbox's walls saying no.
func deniedErrno(errno string) bool {
	return errno == "EACCES" || errno == "EPERM" || errno == "EROFS"
}

// Classify turns a call into an event. Calls that fail for ordinary
// reasons (ENOENT while a program searches its paths), directory and
// O_PATH opens, and calls it does not know give false.
func Classify(c *Call) (backends.TraceEvent, bool) {
	a := c.Args
	arg := func(i int) string {
		if i < len(a) {
			return a[i]
		}
		return ""
	}
	switch c.Name {
	case "open":
		return classifyOpen(c, "", arg(0), arg(1))
	case "openat":
		return classifyOpen(c, arg(0), arg(1), arg(2))
	case "openat2":
		how := arg(2)
		flags := ""
		if i := strings.Index(how, "flags="); i >= 0 {
			flags, _, _ = strings.Cut(how[i+len("flags="):], ",")
		}
		return classifyOpen(c, arg(0), arg(1), flags)
	case "creat":
		return classifyOpen(c, "", arg(0), "O_WRONLY|O_CREAT|O_TRUNC")
	case "execve":
		return classifyExec(c, "", arg(0), arg(1))
	case "execveat":
		return classifyExec(c, arg(0), arg(1), arg(2))
	case "rename":
		return change(c, resolve("", arg(1)), "renamed from "+resolve("", arg(0)))
	case "renameat", "renameat2":
		return change(c, resolve(arg(2), arg(3)), "renamed from "+resolve(arg(0), arg(1)))
	case "unlink":
		return change(c, resolve("", arg(0)), "deleted")
	case "unlinkat":
		if strings.Contains(arg(2), "AT_REMOVEDIR") {
			return change(c, resolve(arg(0), arg(1)), "removed directory")
		}
		return change(c, resolve(arg(0), arg(1)), "deleted")
	case "rmdir":
		return change(c, resolve("", arg(0)), "removed directory")
	case "mkdir":
		return change(c, resolve("", arg(0)), "created directory")
	case "mkdirat":
		return change(c, resolve(arg(0), arg(1)), "created directory")
	case "truncate":
		return change(c, resolve("", arg(0)), "truncated")
	case "link":
		return change(c, resolve("", arg(1)), "hard link to "+resolve("", arg(0)))
	case "linkat":
		return change(c, resolve(arg(2), arg(3)), "hard link to "+resolve(arg(0), arg(1)))
	case "symlink":
		target, _, _ := unquote(arg(0))
		return change(c, resolve("", arg(1)), "symlink to "+target)
	case "symlinkat":
		target, _, _ := unquote(arg(0))
		return change(c, resolve(arg(1), arg(2)), "symlink to "+target)
	case "connect":
		return classifyConnect(c, arg(1))
	case "bind":
		return classifyBind(c, arg(0), arg(1))
	case "io_uring_setup":
		if c.OK() {
			return event(c, KindIncomplete, "io_uring", "an io_uring ring was set up: operations submitted through it are not traced"), true
		}
		if deniedErrno(c.Errno) || c.Errno == "ENOSYS" {
			return event(c, KindDenied, "io_uring_setup", "io_uring_setup: "+c.Errno), true
		}
	}
	return backends.TraceEvent{}, false
}

// resolve makes a path argument absolute with the directory -y printed
// for its descriptor (or the working directory, for AT_FDCWD).
func resolve(dirfd, arg string) string {
	p, cut, ok := unquote(arg)
	if !ok {
		return ""
	}
	if cut {
		p += "…"
	}
	if !path.IsAbs(p) {
		if dir := fdPath(dirfd); dir != "" {
			return path.Join(dir, p)
		}
		return p
	}
	return path.Clean(p)
}

func hasFlag(flags, f string) bool {
	for _, x := range strings.Split(flags, "|") {
		if strings.TrimSpace(x) == f {
			return true
		}
	}
	return false
}

func classifyOpen(c *Call, dirfd, pathArg, flags string) (backends.TraceEvent, bool) {
	write := hasFlag(flags, "O_WRONLY") || hasFlag(flags, "O_RDWR") || hasFlag(flags, "O_CREAT") || hasFlag(flags, "O_TRUNC")
	if !c.OK() {
		if !deniedErrno(c.Errno) {
			return backends.TraceEvent{}, false
		}
		how := "read"
		if write {
			how = "write"
		}
		return event(c, KindDenied, resolve(dirfd, pathArg), c.Name+" for "+how+": "+c.Errno), true
	}
	if hasFlag(flags, "O_DIRECTORY") || hasFlag(flags, "O_PATH") {
		return backends.TraceEvent{}, false
	}
	target := c.RetPath()
	if target == "" {
		target = resolve(dirfd, pathArg)
	}
	if write {
		return event(c, KindWrite, target, "opened "+flags), true
	}
	return event(c, KindRead, target, ""), true
}

func classifyExec(c *Call, dirfd, pathArg, argvArg string) (backends.TraceEvent, bool) {
	target := resolve(dirfd, pathArg)
	if !c.OK() {
		if deniedErrno(c.Errno) {
			return event(c, KindDenied, target, c.Name+": "+c.Errno), true
		}
		return backends.TraceEvent{}, false
	}
	words, cut := stringArray(argvArg)
	detail := backends.ShellJoin(words)
	if cut {
		detail += " …"
	}
	return event(c, KindSpawn, target, detail), true
}

// change is an event for a call that changes the file system.
func change(c *Call, target, detail string) (backends.TraceEvent, bool) {
	if target == "" {
		return backends.TraceEvent{}, false
	}
	if c.OK() {
		return event(c, KindWrite, target, detail), true
	}
	if deniedErrno(c.Errno) {
		return event(c, KindDenied, target, c.Name+" ("+detail+"): "+c.Errno), true
	}
	return backends.TraceEvent{}, false
}

// classifyBind is a TCP socket bound to a port: a server's listening
// port. Port 0 (the kernel picks one), UDP and Unix sockets are left out.
func classifyBind(c *Call, fd, addr string) (backends.TraceEvent, bool) {
	if !strings.Contains(fd, "<TCP:") && !strings.Contains(fd, "<TCPv6:") {
		return backends.TraceEvent{}, false
	}
	target := sockaddr(addr)
	if target == "" || strings.HasPrefix(target, "unix:") || strings.HasSuffix(target, ":0") {
		return backends.TraceEvent{}, false
	}
	switch {
	case c.OK():
		return event(c, KindListen, target, "bound (a server's port)"), true
	case deniedErrno(c.Errno):
		return event(c, KindDenied, target, "bind: "+c.Errno), true
	}
	return backends.TraceEvent{}, false
}

func classifyConnect(c *Call, addr string) (backends.TraceEvent, bool) {
	target := sockaddr(addr)
	if target == "" {
		return backends.TraceEvent{}, false
	}
	ev := ConnectEvent(target, c.Errno)
	ev.TimeMs, ev.Pid, ev.Source = c.TimeMs, c.Pid, SourceStrace
	return ev, true
}

// ConnectEvent is the event of a connect() to target ("127.0.0.1:80",
// "unix:/run/x.sock") that ended with errno ("" when it connected); the
// caller fills in the time, the pid and the source. The engine's Unix
// socket guard, which answers every connect() of a bwrap sandbox (strace
// no longer sees them), reports them with it.
func ConnectEvent(target, errno string) backends.TraceEvent {
	ev := backends.TraceEvent{Kind: KindConnect, Target: target}
	switch {
	case errno == "":
		ev.Detail = "connected"
	case deniedErrno(errno):
		ev.Kind, ev.Detail = KindDenied, "connect: "+errno
	case errno == "EINPROGRESS":
		ev.Detail = "connecting (non-blocking)"
	default:
		ev.Detail = "failed: " + errno
	}
	return ev
}

// sockaddr reads strace's struct sockaddr into "127.0.0.1:80",
// "[::1]:80" or "unix:/run/x.sock"; other families give "".
func sockaddr(s string) string {
	field := func(key, end string) string {
		i := strings.Index(s, key)
		if i < 0 {
			return ""
		}
		v := s[i+len(key):]
		if j := strings.Index(v, end); j >= 0 {
			return v[:j]
		}
		return ""
	}
	switch {
	case strings.Contains(s, "sa_family=AF_INET6"):
		return "[" + field(`inet_pton(AF_INET6, "`, `"`) + "]:" + field("sin6_port=htons(", ")")
	case strings.Contains(s, "sa_family=AF_INET"):
		return field(`sin_addr=inet_addr("`, `"`) + ":" + field("sin_port=htons(", ")")
	case strings.Contains(s, "sa_family=AF_UNIX"):
		i := strings.Index(s, "sun_path=")
		if i < 0 {
			return "unix:(unnamed)"
		}
		rest := s[i+len("sun_path="):]
		if j := strings.LastIndexByte(rest, '}'); j >= 0 {
			rest = rest[:j]
		}
		p, _, ok := unquote(rest)
		if !ok {
			return "unix:(unnamed)"
		}
		return "unix:" + p
	}
	return ""
}
