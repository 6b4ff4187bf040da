package landlock

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/senclaw/sandbox/backends"
)

func TestProbe(t *testing.T) {
	t.Parallel()
	c := Probe()
	if c.Backend != Name || c.CheckedAt.IsZero() || c.Reason == "" {
		t.Fatalf("incomplete capability: %+v", c)
	}
	abi, err := ABIVersion()
	switch {
	case err != nil:
		if c.State != backends.NeverSeen || c.Reason != err.Error() {
			t.Errorf("got %+v for error %v", c, err)
		}
		if runtime.GOOS == "linux" {
			t.Logf("landlock unavailable here: %v", err)
		}
	default:
		if c.State != backends.Healthy || c.Version != "ABI "+strconv.Itoa(abi) || c.Details["abi"] != strconv.Itoa(abi) {
			t.Errorf("got %+v for abi %d", c, abi)
		}
	}
}

func TestEnforces(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		abi  int
		want int
	}{{"abi_1", 1, 1}, {"abi_3", 3, 1}, {"abi_4", 4, 2}, {"abi_6", 6, 2}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := enforces(tc.abi); len(got) != tc.want {
				t.Errorf("enforces(%d) = %v", tc.abi, got)
			}
		})
	}
}
