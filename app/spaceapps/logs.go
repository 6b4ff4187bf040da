package spaceapps

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/senclaw/sandbox/app/apitype"
)

// Log rotation, as supervisord's stdout_logfile_maxbytes and _backups.
const (
	LogMaxBytes = 10 << 20
	LogBackups  = 3
	// DefaultLogRead and MaxLogRead bound one read of the log.
	DefaultLogRead = apitype.AppDefaultLogRead
	MaxLogRead     = apitype.AppMaxLogRead
)

// appLog is an app's runtime log: the server's stdout and stderr, captured
// by the engine into its own data dir (out of the app's reach), a banner
// line before each launch's output, rotated at LogMaxBytes keeping
// LogBackups older files (runtime.log.1 is the newest of them). Followers
// get every byte written after they joined.
type appLog struct {
	path string

	mu        sync.Mutex
	f         *os.File
	size      int64
	held      bool // a launch's output waits for its banner
	pending   bytes.Buffer
	followers map[chan []byte]struct{}
}

func openLog(dir string) (*appLog, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the app's log dir: %w", err)
	}
	l := &appLog{path: filepath.Join(dir, "runtime.log"), followers: map[chan []byte]struct{}{}}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *appLog) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the app's log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// hold keeps what the next launch writes until banner is called, so that
// its banner (which says the isolation the launch really got, known only
// once it started) comes first.
func (l *appLog) hold() {
	l.mu.Lock()
	l.held = true
	l.mu.Unlock()
}

// banner writes a banner line, then what was held back.
func (l *appLog) banner(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.write([]byte("=== senclaw: " + strings.ReplaceAll(line, "\n", " ") + " ===\n"))
	l.held = false
	if l.pending.Len() > 0 {
		l.write(l.pending.Bytes())
		l.pending.Reset()
	}
}

// Write is the server's output.
func (l *appLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		if l.pending.Len() < LogMaxBytes {
			l.pending.Write(p)
		}
		return len(p), nil
	}
	l.write(p)
	return len(p), nil
}

// write appends p, rotating first when it would pass the limit. A failing
// disk must not fail the server: errors drop the bytes.
func (l *appLog) write(p []byte) {
	if l.f == nil {
		return
	}
	if l.size > 0 && l.size+int64(len(p)) > LogMaxBytes {
		l.rotate()
	}
	n, _ := l.f.Write(p)
	l.size += int64(n)
	if n == 0 {
		return
	}
	chunk := bytes.Clone(p[:n])
	for ch := range l.followers {
		select {
		case ch <- chunk:
		default: // a follower that cannot keep up loses bytes, not the server
		}
	}
}

// rotate shifts runtime.log to .1, .1 to .2, ... dropping the oldest.
func (l *appLog) rotate() {
	l.f.Close()
	l.f = nil
	_ = os.Remove(fmt.Sprintf("%s.%d", l.path, LogBackups))
	for i := LogBackups - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", l.path, i), fmt.Sprintf("%s.%d", l.path, i+1))
	}
	_ = os.Rename(l.path, l.path+".1")
	if err := l.open(); err != nil {
		l.f = nil
	}
}

// tail returns the last limit bytes of the log, reaching into the newest
// rotated file when the current one is shorter.
func (l *appLog) tail(limit int) LogChunk {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tailLocked(limit)
}

func (l *appLog) tailLocked(limit int) LogChunk {
	c := LogChunk{SizeBytes: l.size, Files: []string{l.path}}
	for i := 1; i <= LogBackups; i++ {
		p := fmt.Sprintf("%s.%d", l.path, i)
		if _, err := os.Stat(p); err == nil {
			c.Files = append(c.Files, p)
		}
	}
	var parts [][]byte
	left := int64(limit)
	for _, p := range c.Files {
		if left <= 0 {
			c.Truncated = true
			break
		}
		data, more := readTail(p, left)
		parts = append([][]byte{data}, parts...)
		left -= int64(len(data))
		if more {
			c.Truncated = true
			break
		}
	}
	text := bytes.Join(parts, nil)
	c.Text, c.Bytes = string(bytes.ToValidUTF8(text, []byte("\uFFFD"))), len(text)
	return c
}

// readTail reads at most n bytes from the end of path; more says whether
// the file holds more before them.
func readTail(path string, n int64) (data []byte, more bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false
	}
	off := max(fi.Size()-n, 0)
	data = make([]byte, fi.Size()-off)
	k, _ := f.ReadAt(data, off)
	return data[:k], off > 0
}

// lastLines is the last n lines of the log, for a state that needs them
// (crash-looping, a failed start).
func (l *appLog) lastLines(n int) []string {
	text := strings.TrimRight(l.tail(16<<10).Text, "\n")
	if text == "" {
		return []string{}
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, s := range lines {
		if len(s) > 500 {
			lines[i] = s[:500] + "…"
		}
	}
	return lines
}

// clear empties the log and removes the rotated files.
func (l *appLog) clear() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 1; i <= LogBackups; i++ {
		_ = os.Remove(fmt.Sprintf("%s.%d", l.path, i))
	}
	if l.f == nil {
		return l.open()
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("clearing the log: %w", err)
	}
	l.size = 0
	return nil
}

// follow returns the last limit bytes and a channel of what is written
// after them (nothing lost, nothing twice), and a function to stop
// following.
func (l *appLog) follow(limit int) (LogChunk, <-chan []byte, func()) {
	ch := make(chan []byte, 256)
	l.mu.Lock()
	start := l.tailLocked(limit)
	l.followers[ch] = struct{}{}
	l.mu.Unlock()
	return start, ch, func() {
		l.mu.Lock()
		delete(l.followers, ch)
		l.mu.Unlock()
	}
}

func (l *appLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

var _ io.Writer = (*appLog)(nil)
