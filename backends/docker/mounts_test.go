package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckMountSources(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(base, "proj")
	if err := os.Mkdir(ok, 0o755); err != nil {
		t.Fatal(err)
	}
	// shared/data was a directory when the mount was checked; shared is
	// now a link to a directory of secrets.
	secrets := filepath.Join(base, "secrets")
	if err := os.MkdirAll(filepath.Join(secrets, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secrets, filepath.Join(base, "shared")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		src, want string
	}{
		{ok, ""},
		{filepath.Join(base, "shared", "data"), "now leads to " + filepath.Join(secrets, "data")},
		{filepath.Join(base, "gone"), "cannot be found"},
	} {
		for _, exact := range []bool{false, true} {
			// The same checks hold for an exact workspace; an inexact one
			// (a data dir behind a symlink) is not checked.
			err := checkMountSources(shape{Workspace: tc.src, WorkspaceExact: exact})
			switch {
			case (!exact || tc.want == "") && err != nil:
				t.Errorf("workspace %s (exact %v): %v", tc.src, exact, err)
			case exact && tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("workspace %s: %v, want an error with %q", tc.src, err, tc.want)
			}
		}
		err := checkMountSources(shape{Mounts: []mountShape{{Source: ok, Target: "a"}, {Source: tc.src, Target: "b"}}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.src, err, tc.want)
		}
	}
}
