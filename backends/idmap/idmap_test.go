package idmap

import (
	"slices"
	"strings"
	"testing"
)

func TestArgvParses(t *testing.T) {
	t.Parallel()
	argv := Argv("/usr/bin/senclaw", "/var/lib/senclaw/idmap", []Attach{{FD: 9, Point: 0}, {FD: 10, Point: 3}}, 65534, 65534, []string{"/usr/bin/bwrap", "--args", "11", "--", "sh"})
	if argv[0] != "/usr/bin/senclaw" || argv[1] != Arg {
		t.Fatalf("argv %q", argv)
	}
	r, err := parse(argv[2:])
	if err != nil {
		t.Fatal(err)
	}
	if r.dir != "/var/lib/senclaw/idmap" || !slices.Equal(r.mounts, []Attach{{9, 0}, {10, 3}}) || r.uid != 65534 || r.gid != 65534 || !slices.Equal(r.argv, []string{"/usr/bin/bwrap", "--args", "11", "--", "sh"}) {
		t.Fatalf("parsed %+v", r)
	}
}

// TestParseRefuses: the launcher never execs as root, nor a relative
// command, nor without its directory.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"root", []string{"--dir", "/d", "--uid", "0", "--gid", "0", "--", "/bin/bwrap"}, "other than root"},
		{"no_user", []string{"--dir", "/d", "--", "/bin/bwrap"}, "--uid and --gid"},
		{"relative_command", []string{"--dir", "/d", "--uid", "1", "--gid", "1", "--", "bwrap"}, "absolute path"},
		{"relative_dir", []string{"--dir", "d", "--uid", "1", "--gid", "1", "--", "/bin/bwrap"}, "--dir"},
		{"bad_mount", []string{"--dir", "/d", "--mount", "1=0", "--uid", "1", "--gid", "1", "--", "/bin/bwrap"}, "--mount"},
		{"unknown", []string{"--what", "x"}, "unknown option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parse %q: %v, want %q", tc.args, err, tc.want)
			}
		})
	}
}
