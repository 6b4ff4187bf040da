// Package remotefs is the file API of a workspace on another machine.
//
// A Docker engine elsewhere keeps such a workspace in a volume, which the
// engine cannot open, so each operation is an exec of the forwarder
// inside the sandbox's container, in its files role (Serve), as the
// sandbox user: it resolves every path beneath the workspace one
// component at a time without following a link, as the engine's own jail
// does for a local workspace, and acts with the sandbox user's rights. The engine's side (Client) sends the operation as
// arguments and the data on stdin, reads the answer on stdout under a
// bound, and turns the helper's one-line refusals into errors of the same
// kinds as a local workspace's. The helper runs where the sandboxed code
// runs, so what it answers is input like any other from the sandbox.
package remotefs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Arg is the forwarder's option that selects the files role; the
// workspace's path inside and the operation follow it.
const Arg = "--files"

// Operations.
const (
	opList  = "list"
	opRead  = "read"
	opWrite = "write"
	opMkdir = "mkdir"
	opRm    = "rm"
	opUsage = "usage"
	opWalk  = "walk"
)

// exitRefused is the helper's exit code when it refused or failed; its
// stderr's last line says why ("senclaw-files: CODE message").
const exitRefused = 3

const errPrefix = "senclaw-files: "

// Refusal codes.
const (
	codeNotExist   = "notexist"
	codeLink       = "link"
	codePerm       = "perm"
	codeNotDir     = "notdir"
	codeNotRegular = "notregular"
	codeIsNotDir   = "isnotdir"
	codeTooBig     = "toobig"
	codeGrew       = "grew"
	codeUsage      = "usage"
	codeOther      = "io"
)

// Errors of the file API, of the kinds the engine tells apart.
var (
	// ErrLink: a path goes through a symbolic link, never followed.
	ErrLink = errors.New("the path goes through a symbolic link")
	// ErrNotRegular: the path is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotADir: a listing's path is not a directory.
	ErrNotADir = errors.New("not a directory")
)

// TooBigError is a read of a file larger than its limit.
type TooBigError struct{ Size, Limit int64 }

func (e *TooBigError) Error() string {
	return fmt.Sprintf("is %d bytes, more than the %d a read returns", e.Size, e.Limit)
}

// GrewError is a file that grew past the limit while it was read.
type GrewError struct{ Limit int64 }

func (e *GrewError) Error() string {
	return fmt.Sprintf("grew past %d bytes while it was read", e.Limit)
}

// Entry is one entry of a listing.
type Entry struct {
	Name string `json:"n"`
	// Kind is "file", "dir", "link" or "other".
	Kind string `json:"k"`
	Size int64  `json:"s"`
	// ModMs is the modification time in Unix milliseconds.
	ModMs int64  `json:"m"`
	Link  string `json:"l,omitempty"`
}

// WalkEntry is one entry of a walk: its path below the walk's root.
type WalkEntry struct {
	Path  string `json:"p"`
	Dir   bool   `json:"d,omitempty"`
	Size  int64  `json:"s"`
	ModNs int64  `json:"m"`
}

// Exec runs the forwarder in the sandbox with args after its path,
// stdin as its input (nil: none), its stdout into stdout, and returns
// the last line of its stderr and its exit code. The backend provides
// it (an exec as the sandbox user).
type Exec func(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) (stderr string, code int, err error)

// Client is the engine's side.
type Client struct {
	// Binary is the forwarder's path inside the sandbox.
	Binary string
	// Root is the workspace's path inside the sandbox.
	Root string
	Exec Exec
}

// Bounds of what the engine reads of the helper's answers.
const (
	maxListBytes = 64 << 20
	maxLine      = 64 << 10
	maxWalkBytes = 16 << 20
)

func (c *Client) run(ctx context.Context, op string, args []string, stdin io.Reader, stdout io.Writer) error {
	argv := append([]string{c.Binary, Arg, c.Root, op}, args...)
	stderr, code, err := c.Exec(ctx, argv, stdin, stdout)
	if err != nil {
		return err
	}
	if code == 0 {
		return nil
	}
	return refusal(stderr, code)
}

// refusal turns the helper's refusal line into an error.
func refusal(line string, code int) error {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), errPrefix)
	if !ok || code != exitRefused {
		if len(line) > 300 {
			line = line[:300] + "…"
		}
		return fmt.Errorf("the file helper in the sandbox failed (exit %d): %s", code, strings.ToValidUTF8(line, "?"))
	}
	kind, msg, _ := strings.Cut(rest, " ")
	switch kind {
	case codeNotExist:
		return fs.ErrNotExist
	case codeLink:
		return ErrLink
	case codePerm:
		return fs.ErrPermission
	case codeNotDir:
		return syscall.ENOTDIR
	case codeNotRegular:
		return ErrNotRegular
	case codeIsNotDir:
		return ErrNotADir
	case codeTooBig:
		size, _ := strconv.ParseInt(strings.Fields(msg + " 0")[0], 10, 64)
		limit, _ := strconv.ParseInt(strings.Fields(msg + " 0 0")[1], 10, 64)
		return &TooBigError{Size: size, Limit: limit}
	case codeGrew:
		limit, _ := strconv.ParseInt(strings.Fields(msg + " 0")[0], 10, 64)
		return &GrewError{Limit: limit}
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return fmt.Errorf("in the sandbox: %s", strings.ToValidUTF8(msg, "?"))
}

// boundedBuffer keeps at most max bytes and fails past them.
type boundedBuffer struct {
	bytes.Buffer
	max int
}

var errTooLong = errors.New("the file helper's answer is longer than the engine reads")

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errTooLong
	}
	return b.Buffer.Write(p)
}

// List lists the directory rel.
func (c *Client) List(ctx context.Context, rel string) ([]Entry, error) {
	out := &boundedBuffer{max: maxListBytes}
	if err := c.run(ctx, opList, []string{rel}, nil, out); err != nil {
		return nil, err
	}
	var entries []Entry
	err := eachLine(out, func(line []byte) error {
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil || e.Name == "" || strings.ContainsAny(e.Name, "/\x00") {
			return fmt.Errorf("the file helper answered a listing the engine cannot read")
		}
		entries = append(entries, e)
		return nil
	})
	return entries, err
}

func eachLine(r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Read reads the regular file rel, at most limit bytes.
func (c *Client) Read(ctx context.Context, rel string, limit int64) ([]byte, error) {
	out := &boundedBuffer{max: int(limit)}
	err := c.run(ctx, opRead, []string{rel, strconv.FormatInt(limit, 10)}, nil, out)
	if errors.Is(err, errTooLong) {
		return nil, &GrewError{Limit: limit}
	}
	if err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Write replaces the file rel (making its parents) with what r gives,
// and returns how many bytes were written.
func (c *Client) Write(ctx context.Context, rel string, r io.Reader) (int64, error) {
	out := &boundedBuffer{max: 64}
	if err := c.run(ctx, opWrite, []string{rel}, r, out); err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("the file helper did not say how much it wrote")
	}
	return n, nil
}

// Mkdir makes the directory rel and its parents.
func (c *Client) Mkdir(ctx context.Context, rel string) error {
	return c.run(ctx, opMkdir, []string{rel}, nil, io.Discard)
}

// Remove removes rel and, for a directory, everything in it.
func (c *Client) Remove(ctx context.Context, rel string) error {
	return c.run(ctx, opRm, []string{rel}, nil, io.Discard)
}

// Usage counts the workspace: its bytes on disk and its entries.
func (c *Client) Usage(ctx context.Context) (bytes, files int64, err error) {
	out := &boundedBuffer{max: 128}
	if err := c.run(ctx, opUsage, nil, nil, out); err != nil {
		return 0, 0, err
	}
	f := strings.Fields(out.String())
	if len(f) != 2 {
		return 0, 0, errors.New("the file helper did not say the workspace's usage")
	}
	bytes, err1 := strconv.ParseInt(f[0], 10, 64)
	files, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || bytes < 0 || files < 0 {
		return 0, 0, errors.New("the file helper said a usage the engine cannot read")
	}
	return bytes, files, nil
}

// Walk lists every entry below rel, at most max of them (truncated says
// the walk stopped there), leaving out the top-level names in skip.
func (c *Client) Walk(ctx context.Context, rel string, max int, skip []string) (entries []WalkEntry, truncated bool, err error) {
	out := &boundedBuffer{max: maxWalkBytes}
	args := []string{rel, strconv.Itoa(max)}
	args = append(args, skip...)
	if err := c.run(ctx, opWalk, args, nil, out); err != nil && !errors.Is(err, errTooLong) {
		return nil, false, err
	} else if err != nil {
		truncated = true
	}
	err = eachLine(out, func(line []byte) error {
		if string(line) == "truncated" {
			truncated = true
			return nil
		}
		var e WalkEntry
		if json.Unmarshal(line, &e) != nil || e.Path == "" {
			return nil // a line cut short by the bound
		}
		entries = append(entries, e)
		return nil
	})
	if len(entries) > max {
		entries, truncated = entries[:max], true
	}
	return entries, truncated, err
}

// ModTime is an entry's modification time.
func (e Entry) ModTime() time.Time { return time.UnixMilli(e.ModMs) }
