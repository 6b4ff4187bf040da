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
