package daemon

import (
	"strconv"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/direct"
	"github.com/senclaw/sandbox/backends/landlock"
)

func TestOfferedBackends(t *testing.T) {
	t.Parallel()
	all := []backends.Backend{bwrap.New(bwrap.Options{}), landlock.New(landlock.Options{}), direct.New()}
	cases := []struct {
		name, env, want, err string
	}{
		{"all_by_default", "", "bwrap,landlock,direct", ""},
		{"order_of_preference_kept", " direct, bwrap ", "bwrap,direct", ""},
		{"unknown_refused", "bwrap,chroot", "", `"chroot"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := offeredBackends(tc.env, all)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %s", err, tc.err)
				}
				return
			}
			var names []string
			for _, b := range got {
				names = append(names, b.Name())
			}
			if err != nil || strings.Join(names, ",") != tc.want {
				t.Fatalf("got %v %v, want %s", names, err, tc.want)
			}
		})
	}
}

func TestAheadOneShotsComesFromTheEnvironment(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for v, want := range map[string]int{"": app.DefaultAheadOneShots, "0": 0, "8": 8} {
		if n, err := aheadOneShots(env("SENCLAW_AHEAD_ONESHOTS", v)); err != nil || n != want {
			t.Errorf("%q: %d %v, want %d", v, n, err, want)
		}
	}
	// The former name is still read, and the new one wins over it.
	if n, err := aheadOneShots(env("SENCLAW_READY_ONESHOTS", "3")); err != nil || n != 3 {
		t.Errorf("SENCLAW_READY_ONESHOTS=3: %d %v, want 3", n, err)
	}
	if n, err := aheadOneShots(env("SENCLAW_READY_ONESHOTS", "3", "SENCLAW_AHEAD_ONESHOTS", "1")); err != nil || n != 1 {
		t.Errorf("both set: %d %v, want the new name's 1", n, err)
	}
	for _, name := range []string{"SENCLAW_AHEAD_ONESHOTS", "SENCLAW_READY_ONESHOTS"} {
		for _, v := range []string{"9", "-1", "two", " 2"} {
			_, err := aheadOneShots(env(name, v))
			if err == nil || !strings.Contains(err.Error(), name+"="+strconv.Quote(v)) || !strings.Contains(err.Error(), "from 0 (none) to 8") {
				t.Errorf("%s=%q: %v", name, v, err)
			}
		}
	}
}
