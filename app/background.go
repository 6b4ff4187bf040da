package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/senclaw/sandbox/app/jailfs"
)

// Lifetime says in words how a background run ends, for the reply that
// starts it and for `senclaw ps`: a background run has no deadline unless
// it was given one.
func (r *RunRecord) Lifetime() string {
	if !r.Background {
		return ""
	}
	s := "runs until it exits, is killed (senclaw kill " + r.ID + "), its sandbox is stopped or deleted, or the engine stops"
	if r.TTLMs > 0 {
		s += "; killed after " + (time.Duration(r.TTLMs) * time.Millisecond).String() + " (its TTL)"
	}
	if r.IdleTTLMs > 0 {
		s += "; killed after " + (time.Duration(r.IdleTTLMs) * time.Millisecond).String() + " without CPU use or output (its idle TTL)"
	}
	return s
}

// BackgroundRuns lists the background runs going on now, the oldest
// first.
func (e *Engine) BackgroundRuns() ([]RunRecord, error) {
	out := []RunRecord{}
	for _, lr := range e.live.all() {
		if lr.logFile == "" {
			continue
		}
		rec, err := e.Run(lr.id)
		if err != nil {
			var nf *NotFoundError
			if errors.As(err, &nf) {
				continue // it ended while we looked
			}
			return nil, err
		}
		if rec.State == "running" {
			out = append(out, *rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, nil
}

// KillRun kills one live run of any sandbox and waits (up to 10 s) until
// it has ended. It returns false when the run was not going (any more).
func (e *Engine) KillRun(id string) (bool, error) {
	if _, err := e.Run(id); err != nil {
		return false, err
	}
	for _, lr := range e.live.all() {
		if lr.id == id {
			lr.kill("killed by the owner (senclaw kill " + id + ")")
			select {
			case <-lr.done:
			case <-time.After(10 * time.Second):
			}
			return true, nil
		}
	}
	return false, nil
}

// MaxLogRead bounds one read of a background run's log.
const MaxLogRead = 1 << 20

// RunLog is a part of a background run's log.
type RunLog struct {
	RunID string `json:"runId"`
	// Offset is where Data starts in the log; Size is the log's size now.
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Data   string `json:"data"`
	// Running is true while the run goes on (the log may grow).
	Running bool `json:"running"`
}

// ReadRunLog reads up to limit bytes of run id's log from offset (a
// negative offset counts from the end). The log is the run's own output,
// read through an os.Root of its workspace, so a link the sandboxed code
// put in its place cannot lead the engine elsewhere.
func (e *Engine) ReadRunLog(id string, offset int64, limit int) (*RunLog, error) {
	rec, err := e.Run(id)
	if err != nil {
		return nil, err
	}
	if !rec.Background || rec.LogFile == "" {
		return nil, badField("run", id, "is not a background run: its output is in its record (senclaw runs)")
	}
	if limit <= 0 || limit > MaxLogRead {
		return nil, badField("limit", limit, "must be from 1 to %d bytes", MaxLogRead)
	}
	out := &RunLog{RunID: id, Running: rec.State == "running"}
	f, err := e.openRunLogFile(rec)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &NotFoundError{Kind: "log of run", ID: id + " (a one-shot run's log goes with its sandbox when it ends; the record keeps its end)"}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	out.Size = fi.Size()
	if offset < 0 {
		offset = max(0, out.Size+offset)
	}
	out.Offset = min(offset, out.Size)
	buf := make([]byte, min(int64(limit), out.Size-out.Offset))
	n, err := f.ReadAt(buf, out.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the log of run %s: %w", id, err)
	}
	out.Data = string(buf[:n])
	return out, nil
}

// openRunLogFile opens a run's log inside its sandbox's workspace (a
// one-shot sandbox is known only while its run goes on).
func (e *Engine) openRunLogFile(rec *RunRecord) (*os.File, error) {
	workspace := ""
	for _, lr := range e.live.all() {
		if lr.id == rec.ID {
			workspace = lr.workspace
		}
	}
	if workspace == "" {
		sb, err := e.Get(rec.SandboxID)
		if err != nil {
			return nil, fs.ErrNotExist
		}
		workspace = sb.Workspace
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
	err = e.inFolder(workspace, func(d *jailfs.Dir) error {
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
