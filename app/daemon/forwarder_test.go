package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestAForwarderAnotherUserCouldReplaceIsNotUsed: senclaw-netfwd loads
// the Unix socket guard in front of every bwrap command and relays the
// network; one that another local user could swap for a program of
// theirs (in a folder others may write, or in a folder of theirs, also
// on PATH) is passed over with a warning, and the next one is taken.
func TestAForwarderAnotherUserCouldReplaceIsNotUsed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the forwarder is Linux's")
	}
	other := testutil.SecondUser(t)
	put := func(dir string) string {
		p := filepath.Join(dir, "senclaw-netfwd")
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := put(t.TempDir())
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	inOpen := put(open)
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil { // for the second user to reach theirs
			t.Fatal(err)
		}
	}
	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	inTheirs := put(theirs)
	if err := os.Chown(theirs, other.UID, other.GID); err != nil {
		t.Fatal(err)
	}
	// The second user really can replace the one in their folder.
	other.Run(t, "/bin/sh", "-c", "rm -f "+inTheirs+" && printf '#!/bin/sh\\necho theirs\\n' > "+inTheirs+" && chmod 755 "+inTheirs)

	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	if got := forwarderIn([]string{inOpen, inTheirs, good}, logger); got != good {
		t.Errorf("forwarderIn took %q, want %q", got, good)
	}
	if n := strings.Count(logs.String(), "another user could replace it"); n != 2 {
		t.Errorf("%d warnings, want one for each forwarder others could replace:\n%s", n, logs.String())
	}
	if got := forwarderIn([]string{inOpen, inTheirs}, nil); got != "" {
		t.Errorf("with only forwarders others could replace, %q was taken", got)
	}

	// On PATH too: the engine's own lookup passes over a folder others
	// may write.
	t.Setenv("PATH", open+string(os.PathListSeparator)+os.Getenv("PATH"))
	if got := findForwarder(nil); got == inOpen {
		t.Errorf("findForwarder took %s from PATH, a folder others may write", got)
	}
}
