package monitor

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxCommandBytes bounds Proc.Command and ProcInfo.Command. Argument lists can
// be megabytes long (compiler and linker invocations); a process list only
// needs enough to recognise the program.
const MaxCommandBytes = 512

// ProcRef is the cheap part of one host process, enough to build process
// trees: a Lister's Scan returns one for every host process.
type ProcRef struct {
	// Pid is the process id.
	Pid int
	// PPid is the parent's process id, 0 when there is none.
	PPid int
	// Pgid is the process group id; 0 when the platform has none or the
	// scan does not know it yet (Details fills it in).
	Pgid int
	// CreateTime is when the process started; zero when the scan does not
	// know it (Details fills it in). Together with Pid it identifies a
	// process across samples, so a reused pid is not mistaken for the old
	// process.
	CreateTime time.Time
}

// ProcInfo is one host process with the fields that cost a read or a system
// call per process: command line, CPU time and resident memory.
type ProcInfo struct {
	ProcRef
	// Command is argv joined with spaces, cut to MaxCommandBytes, or the
	// process name in brackets when the command line is empty (kernel
	// threads, zombies) or unreadable.
	Command string
	// CPUSeconds is user plus system CPU time used since the process
	// started.
	CPUSeconds float64
	// RSSBytes is the resident set size.
	RSSBytes uint64
}

// Lister reads the host's process table. Sampling is split in two steps so
// that a sample costs one cheap pass over all host processes plus expensive
// reads only for the processes inside sandboxes.
type Lister interface {
	// Scan returns every host process with its parent. It runs on every
	// sample and on every ownership check, so it must be cheap.
	Scan(ctx context.Context) ([]ProcRef, error)
	// Details reads command line, CPU time and memory for refs. A process
	// that exited since the scan is left out, not reported as an error;
	// the error is for failures that make the whole read meaningless.
	Details(ctx context.Context, refs []ProcRef) ([]ProcInfo, error)
}

// commandLine joins argv for display and cuts it to MaxCommandBytes on a rune
// boundary, marking the cut with an ellipsis.
func commandLine(argv []string) string {
	cmd := strings.TrimSpace(strings.Join(argv, " "))
	if len(cmd) <= MaxCommandBytes {
		return cmd
	}
	const ellipsis = "…"
	cut := MaxCommandBytes - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(cmd[cut]) {
		cut--
	}
	return cmd[:cut] + ellipsis
}
