package spaceapps

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLogRotatesAtTenMiBKeepingThree: writes past the limit rotate
// runtime.log to .1, .1 to .2 and so on, three kept; the tail reads
// across the newest rotation; clear empties everything.
func TestLogRotatesAtTenMiBKeepingThree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := openLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for i := 0; i < 5*(LogMaxBytes/len(chunk)); i++ {
		chunk[0] = byte('a' + i%26)
		if _, err := l.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= LogBackups; i++ {
		fi, err := os.Stat(fmt.Sprintf("%s/runtime.log.%d", dir, i))
		if err != nil || fi.Size() > LogMaxBytes || fi.Size() < LogMaxBytes-int64(len(chunk)) {
			t.Fatalf("runtime.log.%d: %v %v", i, fi, err)
		}
	}
	if _, err := os.Stat(fmt.Sprintf("%s/runtime.log.%d", dir, LogBackups+1)); !os.IsNotExist(err) {
		t.Fatalf("more than %d rotated files kept", LogBackups)
	}
	cur, _ := os.Stat(dir + "/runtime.log")
	if cur.Size() > LogMaxBytes {
		t.Fatalf("the current log is %d bytes, over the limit", cur.Size())
	}
	c := l.tail(MaxLogRead)
	if c.Bytes != MaxLogRead || !c.Truncated || len(c.Files) != 1+LogBackups {
		t.Fatalf("tail: %d bytes, truncated %v, files %v", c.Bytes, c.Truncated, c.Files)
	}
	if err := l.clear(); err != nil {
		t.Fatal(err)
	}
	if c := l.tail(100); c.Bytes != 0 || len(c.Files) != 1 {
		t.Fatalf("after clear: %+v", c)
	}
}

// TestBannerComesFirstAndFollowersGetTheRest: output written while the
// launch's banner is held comes after it; a follower gets what is written
// after it joined, once.
func TestBannerComesFirstAndFollowersGetTheRest(t *testing.T) {
	t.Parallel()
	l, err := openLog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	l.Write([]byte("before\n"))
	start, ch, stop := l.follow(DefaultLogRead)
	defer stop()
	if start.Text != "before\n" {
		t.Fatalf("start %q", start.Text)
	}
	l.hold()
	l.Write([]byte("early output\n"))
	l.banner("launch 1: isolation bwrap\nforged")
	l.Write([]byte("later\n"))
	got := ""
	for deadline := time.After(5 * time.Second); !strings.Contains(got, "later"); {
		select {
		case b := <-ch:
			got += string(b)
		case <-deadline:
			t.Fatalf("follower got %q", got)
		}
	}
	want := "=== senclaw: launch 1: isolation bwrap forged ===\nearly output\nlater\n"
	if got != want {
		t.Fatalf("follower got %q, want %q", got, want)
	}
	if text := l.tail(DefaultLogRead).Text; text != "before\n"+want {
		t.Fatalf("log %q", text)
	}
	if lines := l.lastLines(2); len(lines) != 2 || lines[1] != "later" {
		t.Fatalf("last lines %q", lines)
	}
}
