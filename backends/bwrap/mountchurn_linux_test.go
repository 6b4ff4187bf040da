package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// bwrap fails to start now and then when the host's mount table changes
// while it makes a read-only view of a tree (containers/bubblewrap#650:
// "Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags:
// remount ...: Invalid argument"; the fresh clone's CI met it once with
// one-shot workspaces coming and going). Nothing of the sandbox ran: the
// start is made again, and bwrap's message stays out of the run's output.
// The bwrap here fails so on its first start, then is the real one.
func TestAStartThatMetAMountGoingAwayIsMadeAgain(t *testing.T) {
	testutil.RequireBwrap(t)
	u := sandboxUsers(t)[0]
	dirs := newTestDirs(t, u)
	real, _ := filepath.Abs("/usr/bin/bwrap")
	fake := filepath.Join(dirs.base, "bwrap")
	marker := filepath.Join(dirs.base, "failed-once")
	script := "#!/bin/sh\n" +
		"if mkdir " + marker + " 2>/dev/null; then\n" +
		"  echo 'bwrap: Can'\\''t bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount \"/newroot/gone\": Invalid argument' >&2\n" +
		"  exit 1\n" +
		"fi\n" +
		"exec " + real + " \"$@\"\n"
	must(t, os.WriteFile(fake, []byte(script), 0o755))
	must(t, os.Chmod(dirs.base, 0o777)) // the marker is made as the sandbox user
	b := New(Options{Binary: fake})
	spec := newSpec(t, u, dirs.ws, "sh", "-c", "echo ran; echo err >&2")
	r := run(t, b, spec)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the fake bwrap never failed: %v", err)
	}
	if r.err != nil || r.status.Code != 0 || r.stdout != "ran\n" || r.stderr != "err\n" {
		t.Errorf("the start made again: %v %+v stdout %q stderr %q", r.err, r.status, r.stdout, r.stderr)
	}

	// Any other setup failure is not tried again, and says itself.
	must(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: Can'\\''t find source path /nowhere: No such file or directory' >&2\nexit 1\n"), 0o755))
	spec = newSpec(t, u, newTestDirs(t, u).ws, "true")
	var out, errb strings.Builder
	spec.Stdout, spec.Stderr = &out, &errb
	if _, err := b.Start(t.Context(), spec); err == nil || !strings.Contains(err.Error(), "Can't find source path") || errb.Len() > 0 {
		t.Errorf("another setup failure: %v, stderr %q", err, errb.String())
	}
}

func TestMountWentAway(t *testing.T) {
	for msg, want := range map[string]bool{
		`bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount "/newroot/a b": Invalid argument`:                  true,
		`bwrap: Can't bind mount /oldroot/usr on /newroot/usr: Unable to apply mount flags: remount "/newroot/usr/x": No such file or directory`: true,
		`bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount "/newroot/x": Permission denied`:                   false,
		`bwrap: Can't find source path /x: No such file or directory`:                                                                            false,
		// A home removed between the look at the host and its mask.
		`bwrap: Can't mkdir /home/gone/.ssh: Read-only file system`: true,
		`bwrap: Can't mkdir /home/gone/.ssh: Permission denied`:     false,
	} {
		if got := mountWentAway(&SetupError{Message: msg}); got != want {
			t.Errorf("%q: %v, want %v", msg, got, want)
		}
		// Once the command may have run, the line may be its own.
		if mountWentAway(commandMayHaveRun{fmt.Errorf("starting bwrap: %w", &SetupError{Message: msg})}) {
			t.Errorf("%q after the setup was through was taken for a mount that went away", msg)
		}
	}
}
