package main

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

func TestReadyOneShotsComesFromTheEnvironment(t *testing.T) {
	for v, want := range map[string]int{"": app.DefaultReadyOneShots, "0": 0, "8": 8} {
		if n, err := readyOneShots(v); err != nil || n != want {
			t.Errorf("%q: %d %v, want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"9", "-1", "two", " 2"} {
		_, err := readyOneShots(v)
		if err == nil || !strings.Contains(err.Error(), "SENCLAW_READY_ONESHOTS="+strconv.Quote(v)) || !strings.Contains(err.Error(), "from 0 (none) to 8") {
			t.Errorf("%q: %v", v, err)
		}
	}
}
