package main

import (
	"strings"
	"testing"

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
