// Package tracer turns what a run does into backends.TraceEvents. It holds
// the pieces every backend shares: the strace command line (StraceArgs), a
// parser for strace's output (Parser, Classify, Follow), a Session that
// runs a backend's exec.Cmd under strace and feeds Spec.Trace, and the
// vocabulary (event kinds, sources, the NoOutsideTracer marker).
//
// Tracing is for review, not security evidence: it shows what code
// touched, from outside the sandbox where the platform allows. It does not
// see reads and writes on descriptors that were already open, memory
// mappings, or anything done through interfaces the sandbox's seccomp
// filter does not deny and strace does not follow.
package tracer

import (
	"strings"

	"github.com/senclaw/sandbox/backends"
)

// NoOutsideTracer is the phrase a backend puts in Enforcement.Missing when
// Spec.Trace was set and it cannot trace the run from outside the sandbox.
// The engine then relies on in-sandbox hooks and the workspace diff.
const NoOutsideTracer = "trace: no outside tracer for this backend; activity comes from in-sandbox hooks and a workspace diff"

// Outside is implemented by backends that can trace a run from outside
// the sandbox. The engine asks before the run, because in-sandbox hooks
// must be set up in the run's environment before it starts.
type Outside interface {
	// TracesFromOutside reports whether Start traces from outside when
	// Spec.Trace is set, and says how (or why not) in words.
	TracesFromOutside() (ok bool, how string)
}

// Event kinds.
const (
	KindRead    = "file.read"
	KindWrite   = "file.write"
	KindSpawn   = "proc.spawn"
	KindConnect = "net.connect"
	KindDNS     = "net.dns"
	// KindListen is a TCP socket bound to a port of its own choosing
	// (a server's), which learn mode proposes as a listen port.
	KindListen = "net.listen"
	KindDenied = "denied"
	// KindTruncated marks events that were dropped (the per-run limit,
	// the bounded workspace walk).
	KindTruncated = "trace.truncated"
	// KindIncomplete marks a part of the run the trace cannot see (an
	// io_uring ring that was set up, a tracer that could not start).
	KindIncomplete = "trace.incomplete"
)

// Kinds lists every kind, for validating events from untrusted sources.
var Kinds = []string{KindRead, KindWrite, KindSpawn, KindConnect, KindDNS, KindListen, KindDenied, KindTruncated, KindIncomplete}

// ValidKind reports whether k is one of Kinds.
func ValidKind(k string) bool {
	for _, v := range Kinds {
		if v == k {
			return true
		}
	}
	return false
}

// Sources say who observed an event.
const (
	SourceStrace = "strace"
	SourceHooks  = "in-sandbox (can be tampered with)"
	// SourceContainerHooks is the hooks' in a container on another
	// machine's engine, where no tracer runs from outside.
	SourceContainerHooks = "in-container hooks (can be tampered with)"
	SourceDiff           = "diff"
	SourceEngine         = "engine"
)

// foldRoots are the system trees whose reads are folded into one summary
// event each: programs read hundreds of files there just to start.
var foldRoots = []string{
	"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc",
	"/proc", "/sys", "/dev", "/nix/store", "/run/current-system",
}

// FoldRoot returns the system root p lies in ("/usr" for
// "/usr/lib/libc.so.6"), or false when p is not in one.
func FoldRoot(p string) (string, bool) {
	for _, r := range foldRoots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return r, true
		}
	}
	return "", false
}

// event is a shorthand for the events the strace parser makes.
func event(c *Call, kind, target, detail string) backends.TraceEvent {
	return backends.TraceEvent{TimeMs: c.TimeMs, Pid: c.Pid, Kind: kind, Target: target, Detail: detail, Source: SourceStrace}
}
