// Package tracehooks installs and collects the trace hooks that run inside a
// sandbox.
//
// They are a Python sitecustomize with audit hooks and a Node preload. The
// engine uses them for traced runs on backends that cannot trace from
// outside the sandbox. What they record comes from inside, so the traced
// code can forge or suppress it; events are labelled tracer.SourceHooks.
//
// Every file operation goes through jailfs: the workspace belongs to the
// sandboxed code, which may have planted links (in it, or in the path of
// an agent's project dir) to make the engine write or read elsewhere, or
// read, as root, a file of the workspace it may not read itself. No link
// is followed.
package tracehooks

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/tracer"
)

var (
	//go:embed sitecustomize.py
	sitecustomize []byte
	//go:embed senclaw_trace.cjs
	nodePreload []byte
)

// Dir is the workspace directory (relative) that holds the hooks and the
// trace files; the workspace diff skips it.
const Dir = ".senclaw"

const (
	hooksDir = Dir + "/hooks"
	traceDir = Dir + "/trace"
	// maxTraceBytes bounds what is read of one run's trace file, and
	// maxTraceLine one line of it (an event); the collector bounds the
	// events kept.
	maxTraceBytes = 16 << 20
	maxTraceLine  = 1 << 20
)

// TraceFile is the workspace-relative trace file of runID.
func TraceFile(runID string) string { return traceDir + "/" + runID + ".ndjson" }

// Install writes the hooks into workspace and prepares the trace dir,
// owned by owner (nil: the engine's own user), and returns the
// environment variables that turn them on, given that env (K=V) is the
// run's environment: PYTHONPATH and NODE_OPTIONS are only set when the
// run does not set them itself.
func Install(workspace, runID string, owner *backends.Credential, env []string) (map[string]string, error) {
	d, err := jailfs.OpenDir(workspace)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace: %w", err)
	}
	defer d.Close()
	for _, dir := range []string{Dir, hooksDir, traceDir} {
		if err := d.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s in the workspace: %w", dir, err)
		}
	}
	td, err := d.Open(traceDir, os.O_RDONLY|dirOnly, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", traceDir, err)
	}
	defer td.Close()
	if owner != nil {
		if err := td.Chown(int(owner.UID), int(owner.GID)); err != nil {
			return nil, fmt.Errorf("giving %s to the sandbox user: %w", traceDir, err)
		}
	}
	if err := td.Chmod(0o700); err != nil {
		return nil, fmt.Errorf("protecting %s: %w", traceDir, err)
	}
	for name, data := range map[string][]byte{"sitecustomize.py": sitecustomize, "senclaw_trace.cjs": nodePreload} {
		if err := writeFile(d, hooksDir+"/"+name, data); err != nil {
			return nil, fmt.Errorf("writing the %s hook: %w", name, err)
		}
	}
	return Vars(workspace, runID, env), nil
}

// Vars are the environment variables that turn the hooks of a workspace
// seen at workspace (inside the sandbox) on, given the run's env.
func Vars(workspace, runID string, env []string) map[string]string {
	hooks := filepath.Join(workspace, hooksDir)
	vars := map[string]string{"SENCLAW_TRACE_FILE": filepath.Join(workspace, TraceFile(runID))}
	if !hasVar(env, "PYTHONPATH") {
		vars["PYTHONPATH"] = hooks
	}
	if !hasVar(env, "NODE_OPTIONS") {
		vars["NODE_OPTIONS"] = fmt.Sprintf("--require %q", filepath.Join(hooks, "senclaw_trace.cjs"))
	}
	return vars
}

// Files are the hooks and the trace directory, for a workspace the
// engine cannot write itself (a sandbox on another machine: the backend
// puts them in with the run); a path ending in "/" is a directory.
func Files() []backends.File {
	return []backends.File{
		{Path: hooksDir + "/sitecustomize.py", Data: sitecustomize},
		{Path: hooksDir + "/senclaw_trace.cjs", Data: nodePreload},
		{Path: traceDir + "/"},
	}
}

// MaxTraceBytes bounds what is read of one run's trace file.
const MaxTraceBytes = maxTraceBytes

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// Collect reads runID's trace file, passes its events to add (labelled as
// in-sandbox, unknown kinds dropped) and deletes the file. It reads at most
// maxTraceBytes, skips lines longer than maxTraceLine and goes on, and
// says so in markers. It returns how many events it passed on.
func Collect(workspace, runID string, add func(backends.TraceEvent)) (int, error) {
	d, err := jailfs.OpenDir(workspace)
	if err != nil {
		return 0, fmt.Errorf("opening the workspace: %w", err)
	}
	defer d.Close()
	name := TraceFile(runID)
	defer d.RemoveAll(name)
	f, err := d.Open(name, os.O_RDONLY|nonBlock, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("opening the trace file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("the trace file %s is not a regular file", name)
	}
	return Parse(f, tracer.SourceHooks, add)
}

// Parse reads a trace file's events from r and passes them to add,
// labelled source (unknown kinds dropped): at most maxTraceBytes are
// read, and lines longer than maxTraceLine are skipped, each said in
// a marker. It returns how many events it passed on.
func Parse(r io.Reader, source string, add func(backends.TraceEvent)) (int, error) {
	n, long := 0, 0
	lr := &io.LimitedReader{R: r, N: maxTraceBytes}
	br := bufio.NewReaderSize(lr, 64<<10)
	for {
		line, tooLong, err := tracer.ReadLine(br, maxTraceLine)
		var ev backends.TraceEvent
		switch {
		case tooLong:
			long++
		case json.Unmarshal([]byte(line), &ev) != nil || !hookKind(ev.Kind) || ev.Target == "":
		default:
			ev.Source = source
			add(ev) // the collector clips its text
			n++
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
	}
	if long > 0 {
		add(backends.TraceEvent{Kind: tracer.KindIncomplete, Target: "in-sandbox hooks", Source: tracer.SourceEngine,
			Detail: fmt.Sprintf("%d lines of the in-sandbox trace file were longer than %d KiB and were skipped", long, maxTraceLine>>10)})
	}
	if lr.N == 0 {
		if k, _ := r.Read(make([]byte, 1)); k > 0 {
			add(backends.TraceEvent{Kind: tracer.KindTruncated, Target: "in-sandbox hooks", Source: tracer.SourceEngine,
				Detail: fmt.Sprintf("the in-sandbox trace file was longer than %d MiB; the rest was not read", maxTraceBytes>>20)})
		}
	}
	return n, nil
}

// Discard removes runID's trace file (a run that did not start).
func Discard(workspace, runID string) {
	if d, err := jailfs.OpenDir(workspace); err == nil {
		_ = d.RemoveAll(TraceFile(runID))
		d.Close()
	}
}

// writeFile replaces name in d with data (a regular file, never a link).
func writeFile(d *jailfs.Dir, name string, data []byte) error {
	f, err := d.Open(name, os.O_WRONLY|os.O_CREATE|nonBlock, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", name)
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Close()
}

// hookKind: the hooks report actions, never markers.
func hookKind(k string) bool {
	return tracer.ValidKind(k) && !strings.HasPrefix(k, "trace.")
}
