package landlock

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/unixguard"
)

func TestProbe(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := New(Options{}).Probe(ctx)
	abi, _ := ABIVersion()
	if c.State != backends.Healthy || !c.Isolates || c.Version != "ABI "+strconv.Itoa(abi) || c.Details["abi"] != strconv.Itoa(abi) {
		t.Fatalf("capability %+v", c)
	}
	if !strings.Contains(c.Reason, "could not write outside its workspace") || !slices.Contains(c.Enforces, "fs") {
		t.Errorf("capability %+v", c)
	}
	if c.Details["processes"] == "" || c.Details["scoping"] == "" || !strings.Contains(c.Details["agent_files"], "not kept read-only") {
		t.Errorf("details %v", c.Details)
	}
	// The capability card says whether a connect may reach the door's
	// port on another host.
	if ok, _ := unixguard.Available(); ok != strings.Contains(c.Details["addresses"], "connects only to the run's door") {
		t.Errorf("addresses: %q", c.Details["addresses"])
	}
}

func TestEnforcesByABI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		abi  int
		want []string
	}{
		{"abi_2_too_old", 2, nil},
		{"abi_3", 3, []string{"fs", "seccomp", "disk"}},
		{"abi_4_tcp", 4, []string{"fs", "seccomp", "disk", "network", "ports"}},
		{"abi_6_scoping", 6, []string{"fs", "seccomp", "disk", "network", "ports", "signals"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Enforces(tc.abi); !slices.Equal(got, tc.want) {
				t.Errorf("Enforces(%d) = %v, want %v", tc.abi, got, tc.want)
			}
			f := Features(tc.abi)
			if (tc.abi >= 4) == strings.HasPrefix(f["tcp"], "no") || (tc.abi >= 6) == strings.HasPrefix(f["scoping"], "no") {
				t.Errorf("Features(%d) = %v", tc.abi, f)
			}
		})
	}
}
