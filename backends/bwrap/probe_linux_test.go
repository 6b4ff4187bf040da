package bwrap

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

func TestProbeStates(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	var logs bytes.Buffer
	b := New(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c := b.Probe(ctx)
	if c.State != backends.Healthy || !c.Isolates || c.Version == "" {
		t.Fatalf("first probe: %+v", c)
	}
	if c.Details["seccomp"] != "yes" || c.Details["cgroup"] == "" || c.Details["user"] == "" {
		t.Errorf("details %v", c.Details)
	}
	if os.Geteuid() == 0 && c.Details["user"] != "65534:65534" {
		t.Errorf("a root engine probes as %s", c.Details["user"])
	}
	for _, want := range []string{"fs", "network", "seccomp", "disk"} {
		if !slices.Contains(c.Enforces, want) {
			t.Errorf("Enforces %v lacks %s", c.Enforces, want)
		}
	}
	if c2 := b.Probe(ctx); c2.State != backends.Healthy {
		t.Fatalf("second probe: %+v", c2)
	}
	b.opts.Binary = "/nonexistent/bwrap"
	c3 := b.Probe(ctx)
	if c3.State != backends.SeenGone || !strings.Contains(c3.Reason, "apt-get install bubblewrap") {
		t.Fatalf("after removal: %+v", c3)
	}
	if n := strings.Count(logs.String(), "bwrap backend state changed"); n != 2 {
		t.Errorf("logged %d state changes, want 2:\n%s", n, logs.String())
	}
}

func TestProbeNeverSeen(t *testing.T) {
	t.Parallel()
	b := New(Options{Binary: "/nonexistent/bwrap"})
	c := b.Probe(context.Background())
	if c.State != backends.NeverSeen || !strings.Contains(c.Reason, "apt-get install bubblewrap") || c.Usable() {
		t.Fatalf("got %+v", c)
	}
}

func TestProbeDeadline(t *testing.T) {
	t.Parallel()
	testutil.RequireBwrap(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if c := New(Options{}).Probe(ctx); c.State == backends.Healthy {
		t.Fatalf("healthy past the deadline: %+v", c)
	}
}

func TestDiagnoseUserns(t *testing.T) {
	t.Parallel()
	sysctls := func(vals map[string]string) func(string) (string, error) {
		return func(p string) (string, error) {
			if v, ok := vals[p]; ok {
				return v + "\n", nil
			}
			return "", errors.New("no such file")
		}
	}
	cases := []struct {
		name   string
		stderr string
		vals   map[string]string
		want   string
	}{
		{"apparmor", "bwrap: setting up uid map: Permission denied", map[string]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}, "apparmor_restrict_unprivileged_userns=0"},
		{"debian_sysctl", "bwrap: No permission to create new namespace, likely because the kernel does not allow non-privileged user namespaces", map[string]string{"/proc/sys/kernel/unprivileged_userns_clone": "0"}, "unprivileged_userns_clone=1"},
		{"max_zero", "bwrap: Creating new namespace failed: No space left on device", map[string]string{"/proc/sys/user/max_user_namespaces": "0"}, "max_user_namespaces=15000"},
		{"unknown_cause", "bwrap: Creating new namespace failed: Operation not permitted", nil, "may not create user namespaces"},
		{"other_error", "bwrap: Can't find source path /x", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := diagnoseUserns(tc.stderr, sysctls(tc.vals))
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want it to mention %q", got, tc.want)
			}
		})
	}
}
