package tracehooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/tracer"
)

// The trace file is the sandboxed code's: a line too long to be an event
// is skipped and said so, and the events after it still count; past
// maxTraceBytes nothing more is read.
func TestCollectIsBoundedAndGoesOn(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if _, err := Install(ws, "r1", nil, nil); err != nil {
		t.Fatal(err)
	}
	ev := `{"tsMs":1,"pid":2,"kind":"file.read","target":"/w/a"}`
	data := ev + "\n" + `{"kind":"file.read","target":"` + strings.Repeat("x", 2<<20) + `"}` + "\n" +
		strings.Replace(ev, "/w/a", "/w/b", 1) + "\n" +
		`{"kind":"trace.truncated","target":"forged"}` + "\n"
	if err := os.WriteFile(filepath.Join(ws, TraceFile("r1")), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	n, err := Collect(ws, "r1", func(ev backends.TraceEvent) { got = append(got, ev.Kind+" "+ev.Target+" "+ev.Source) })
	if err != nil || n != 2 {
		t.Fatalf("Collect = %d, %v; events %q", n, err, got)
	}
	want := []string{"file.read /w/a " + tracer.SourceHooks, "file.read /w/b " + tracer.SourceHooks, "trace.incomplete in-sandbox hooks engine"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(ws, TraceFile("r1"))); !os.IsNotExist(err) {
		t.Errorf("the trace file was left: %v", err)
	}

	// A file larger than the bound: read up to it, and marked.
	if _, err := Install(ws, "r2", nil, nil); err != nil {
		t.Fatal(err)
	}
	line := ev + "\n"
	big := strings.Repeat(line, maxTraceBytes/len(line)+100)
	if err := os.WriteFile(filepath.Join(ws, TraceFile("r2")), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	var last backends.TraceEvent
	n, err = Collect(ws, "r2", func(ev backends.TraceEvent) { last = ev })
	if err != nil || n > maxTraceBytes/len(line)+1 || last.Kind != tracer.KindTruncated {
		t.Fatalf("a %d MiB file: %d events, %v, last %+v", len(big)>>20, n, err, last)
	}
}

// The trace file is the sandbox's: a link it plants there, even to a file
// inside its own workspace that it may not read (root's, for a root
// engine), is not followed, so the engine does not read that file for it
// (no link the sandbox planted is followed).
func TestCollectFollowsNoLink(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, traceDir), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(ws, "root-only.ndjson")
	if err := os.WriteFile(secret, []byte(`{"kind":"file.read","target":"SECRET-LINE"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../root-only.ndjson", filepath.Join(ws, TraceFile("r1"))); err != nil {
		t.Fatal(err)
	}
	var got []backends.TraceEvent
	n, err := Collect(ws, "r1", func(ev backends.TraceEvent) { got = append(got, ev) })
	if n != 0 || len(got) != 0 || err == nil {
		t.Fatalf("collected %d events %+v (err %v) through a planted link", n, got, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, TraceFile("r1"))); !os.IsNotExist(err) {
		t.Errorf("the planted link was not removed: %v", err)
	}
	// A real trace file is read, and removed.
	if err := os.WriteFile(filepath.Join(ws, TraceFile("r2")), []byte(`{"kind":"file.write","target":"/w/x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := Collect(ws, "r2", func(backends.TraceEvent) {}); n != 1 || err != nil {
		t.Fatalf("a real trace file: %d, %v", n, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, TraceFile("r2"))); !os.IsNotExist(err) {
		t.Errorf("the trace file was not removed: %v", err)
	}
}

// Install puts the hooks in place without following a link the sandbox
// left where they go.
func TestInstallFollowsNoLink(t *testing.T) {
	t.Parallel()
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, Dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(ws, "r1", nil, nil); err == nil {
		t.Error("Install went through a link")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("Install wrote outside the workspace: %v", entries)
	}
}
