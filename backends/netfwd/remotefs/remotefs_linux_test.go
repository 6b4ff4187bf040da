package remotefs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// local is a client whose helper runs in this process on dir.
func local(t *testing.T, dir string) *Client {
	t.Helper()
	return &Client{Binary: "senclaw-netfwd", Root: dir, Exec: func(_ context.Context, argv []string, stdin io.Reader, stdout io.Writer) (string, int, error) {
		if argv[1] != Arg {
			t.Fatalf("argv %q", argv)
		}
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		var stderr bytes.Buffer
		code := Serve(argv[2:], stdin, stdout, &stderr)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return lines[len(lines)-1], code, nil
	}}
}

func TestFilesRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := local(t, dir)
	ctx := context.Background()
	if n, err := c.Write(ctx, "a/b/c.txt", strings.NewReader("hello")); err != nil || n != 5 {
		t.Fatalf("write: %d %v", n, err)
	}
	if got, err := c.Read(ctx, "a/b/c.txt", 100); err != nil || string(got) != "hello" {
		t.Fatalf("read: %q %v", got, err)
	}
	if n, err := c.Write(ctx, "a/b/c.txt", strings.NewReader("hi")); err != nil || n != 2 {
		t.Fatalf("rewrite: %d %v", n, err)
	}
	if got, _ := c.Read(ctx, "a/b/c.txt", 100); string(got) != "hi" {
		t.Fatalf("a rewrite kept %q", got)
	}
	if err := c.Mkdir(ctx, "d/e"); err != nil {
		t.Fatal(err)
	}
	_ = os.Symlink("/etc", filepath.Join(dir, "ln"))
	entries, err := c.List(ctx, ".")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, e := range entries {
		kinds[e.Name] = e.Kind + ":" + e.Link
	}
	if kinds["a"] != "dir:" || kinds["d"] != "dir:" || kinds["ln"] != "link:/etc" {
		t.Fatalf("listing: %v", kinds)
	}
	bytes, files, err := c.Usage(ctx)
	if err != nil || files != 6 || bytes <= 0 {
		t.Fatalf("usage: %d bytes, %d files, %v", bytes, files, err)
	}
	walked, truncated, err := c.Walk(ctx, ".", 100, []string{"d"})
	if err != nil || truncated || len(walked) != 4 {
		t.Fatalf("walk: %+v %v %v", walked, truncated, err)
	}
	if _, truncated, _ := c.Walk(ctx, ".", 2, nil); !truncated {
		t.Fatal("a walk past its bound is not truncated")
	}
	if err := c.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Fatal("a is still there")
	}
	if err := c.Remove(ctx, "ln"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal("removing a link to /etc removed its target")
	}
}

// Every path that goes through a link is refused, whatever the link
// points at, as the engine's own jail does; so is any lexical escape.
func TestFilesNeverFollowLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600)
	_ = os.Symlink(outside, filepath.Join(dir, "out"))
	_ = os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "file"))
	_ = os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	_ = os.Symlink("..", filepath.Join(dir, "sub", "up"))
	_ = syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600)
	c := local(t, dir)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"read_through_dir_link", func() error { _, err := c.Read(ctx, "out/secret", 10); return err }, ErrLink},
		{"read_link", func() error { _, err := c.Read(ctx, "file", 10); return err }, ErrLink},
		{"write_through_link", func() error { _, err := c.Write(ctx, "out/new", strings.NewReader("x")); return err }, ErrLink},
		{"write_link", func() error { _, err := c.Write(ctx, "file", strings.NewReader("x")); return err }, ErrLink},
		{"mkdir_through_link", func() error { return c.Mkdir(ctx, "out/d") }, ErrLink},
		{"list_link", func() error { _, err := c.List(ctx, "out"); return err }, ErrLink},
		{"list_up_link", func() error { _, err := c.List(ctx, "sub/up"); return err }, ErrLink},
		{"read_fifo", func() error { _, err := c.Read(ctx, "fifo", 10); return err }, ErrNotRegular},
		{"read_dir", func() error { _, err := c.Read(ctx, "sub", 10); return err }, ErrNotRegular},
		{"list_file", func() error { _, err := c.List(ctx, "fifo"); return err }, ErrNotADir},
		{"missing", func() error { _, err := c.Read(ctx, "nothing", 10); return err }, fs.ErrNotExist},
	} {
		if err := tc.do(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, bad := range []string{"../x", "a/../../x", "/etc/passwd", "", "a//b"} {
		if _, err := c.Read(ctx, bad, 10); err == nil {
			t.Errorf("read %q was not refused", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("a write went through the link")
	}
	if _, err := c.Read(ctx, "sub", 10); err == nil {
		t.Fatal("a directory read as a file")
	}
	var big *TooBigError
	os.WriteFile(filepath.Join(dir, "big"), make([]byte, 100), 0o644)
	if _, err := c.Read(ctx, "big", 10); !errors.As(err, &big) || big.Size != 100 || big.Limit != 10 {
		t.Fatalf("a read past the limit: %v", err)
	}
}
