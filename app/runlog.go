package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/senclaw/sandbox/app/jailfs"
)

// MaxLogRead bounds one read of a run's log.
const MaxLogRead = 1 << 20

// recordLogTail is how much of a background run's log its record keeps:
// the last bytes, as much as a foreground run's record keeps of its two
// streams together (a background run's stdout and stderr go to one log).
// A one-shot's log goes with its workspace when the run ends; this is
// what stays of it, bounded as every record is.
const recordLogTail = 2 * recordTail

// RunOutput is a run's output as `senclaw logs` reads it, whatever the
// run: a background run's log (its file while there is one, then the
// last part its record keeps), what a foreground run going on writes
// (both streams in the order they came), or what a finished run's record
// keeps.
type RunOutput struct {
	e  *Engine
	id string
	// live is what a foreground run writes, held from the open on, so
	// that a reader that follows it gets its last bytes after it ended.
	live *outputRing
}

// OpenRunLog opens run id's output for reading (RunOutput).
func (e *Engine) OpenRunLog(id string) (*RunOutput, error) {
	rec, err := e.Run(id)
	if err != nil {
		return nil, err
	}
	if rec.Source == SourceSpaceApp && rec.LogFile == "" {
		return nil, badField("run", id, "is a Space App's server: its output is in the app's log (senclaw apps logs APP)")
	}
	o := &RunOutput{e: e, id: id}
	if !rec.Background && rec.State == "running" {
		o.live = e.live.output(id) // nil when it ended since: its record has it
	}
	return o, nil
}

// ReadRunLog reads up to limit bytes of run id's output from offset (a
// negative offset counts from the end): RunOutput.Read.
func (e *Engine) ReadRunLog(id string, offset int64, limit int) (*RunLog, error) {
	o, err := e.OpenRunLog(id)
	if err != nil {
		return nil, err
	}
	return o.Read(offset, limit)
}

// Read reads up to limit bytes from offset (negative: from the end). A
// part starts later than offset when the bytes there were not kept.
func (o *RunOutput) Read(offset int64, limit int) (*RunLog, error) {
	if limit <= 0 || limit > MaxLogRead {
		return nil, badField("limit", limit, "must be from 1 to %d bytes", MaxLogRead)
	}
	if o.live != nil {
		data, at, size, done := o.live.read(offset, limit)
		return &RunLog{RunID: o.id, Offset: at, Size: size, Data: string(data), Running: !done}, nil
	}
	rec, err := o.e.Run(o.id)
	if err != nil {
		return nil, err
	}
	if rec.Background && rec.LogFile != "" {
		l, err := o.e.readLogFile(rec, offset, limit)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return l, err
		}
		if rec.State == "running" {
			// The run may have ended since its record was read, and its
			// one-shot workspace gone with it: the record now says so.
			if rec, err = o.e.Run(o.id); err != nil {
				return nil, err
			}
			if rec.State == "running" {
				return nil, badField("run", o.id, "has no log file any more (%s): something in its sandbox removed it", filepath.Base(rec.LogFile))
			}
		}
		// A one-shot's workspace went with it, or the sandbox was
		// deleted: the record keeps the log's end.
	}
	return keptLog(rec, offset, limit), nil
}

// readLogFile reads a background run's log file.
func (e *Engine) readLogFile(rec *RunRecord, offset int64, limit int) (*RunLog, error) {
	f, err := e.openRunLogFile(rec)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	out := &RunLog{RunID: rec.ID, Running: rec.State == "running", Size: fi.Size()}
	if offset < 0 {
		offset = max(0, out.Size+offset)
	}
	out.Offset = min(offset, out.Size)
	buf := make([]byte, min(int64(limit), out.Size-out.Offset))
	n, err := f.ReadAt(buf, out.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the log of run %s: %w", rec.ID, err)
	}
	out.Data = string(buf[:n])
	return out, nil
}

// keptLog is the output rec keeps, as a log: a background run's log's
// last bytes, at their place in the log; a foreground run's stdout, then
// its stderr (StderrAt says where).
func keptLog(rec *RunRecord, offset int64, limit int) *RunLog {
	data, first := rec.Stdout, int64(0)
	out := &RunLog{RunID: rec.ID, Running: rec.State == "running", Kept: true}
	if rec.Background {
		first = max(0, rec.LogSize-int64(len(data)))
	} else {
		at := int64(len(rec.Stdout))
		out.StderrAt = &at
		data += rec.Stderr
	}
	out.Size = first + int64(len(data))
	if offset < 0 {
		offset = max(0, out.Size+offset)
	}
	out.Offset = min(max(offset, first), out.Size)
	from := out.Offset - first
	out.Data = data[from:min(int64(len(data)), from+int64(limit))]
	return out
}

// logTail reads the end of a background run's log for its record once
// the run is over: the last recordLogTail bytes and the log's size ("",
// 0 when it cannot be read: the sandbox may have put a link or a FIFO
// there).
func (e *Engine) logTail(rec *RunRecord) (string, int64) {
	f, err := e.openRunLogFile(rec)
	if err != nil {
		return "", 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0
	}
	from := max(0, fi.Size()-recordLogTail)
	buf := make([]byte, fi.Size()-from)
	n, err := f.ReadAt(buf, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", 0
	}
	return lastBytes(string(buf[:n]), recordLogTail), fi.Size()
}

// openRunLogFile opens a run's log inside its sandbox's workspace (a
// one-shot sandbox is known only while its run goes on).
func (e *Engine) openRunLogFile(rec *RunRecord) (*os.File, error) {
	if rec.Engine != "" {
		// A run on another machine's engine: its log is the engine's own
		// file here (the output came over the exec's stream).
		return e.openRemoteLog(rec)
	}
	workspace := ""
	// A stored sandbox's log is its user's; a live one-shot's, its run's.
	user := e.userOf(&Sandbox{UID: rec.UID, GID: rec.UID})
	sb, err := e.Get(rec.SandboxID)
	if err == nil {
		workspace, user = sb.Workspace, e.userOf(sb)
	}
	for _, lr := range e.live.all() {
		if lr.id == rec.ID {
			workspace = lr.workspace
		}
	}
	if workspace == "" {
		return nil, fs.ErrNotExist
	}
	rel, err := filepath.Rel(workspace, rec.LogFile)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("the log of run %s is not in its sandbox's workspace", rec.ID)
	}
	if within(workspace, e.workspacesDir()) {
		workspace = canonical(workspace) // the engine's own: its real path
	}
	// As the file API reads: as the sandbox user, following no link (the
	// sandboxed code may have put one, or a FIFO, where its log was).
	var f *os.File
	err = e.inFolder(user, workspace, func(d *jailfs.Dir) error {
		var err error
		f, err = d.OpenRegular(filepath.ToSlash(rel))
		return err
	})
	switch {
	case errors.Is(err, jailfs.ErrLink):
		return nil, badField("run", rec.ID, "has a symbolic link where its log was (%s), which is not followed", rel)
	case errors.Is(err, jailfs.ErrNotRegular):
		return nil, badField("run", rec.ID, "has something other than a file where its log was (%s)", rel)
	}
	return f, err
}
