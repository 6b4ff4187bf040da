package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/internal/benchtest"
)

// TestBenchHostExec times whole processes, interleaved in one run, with
// the Agent shell switch off: senclaw agent-shell -c CMD as the owner
// (host exec run directly, record "none") and as an agent token (the
// same command under its own Landlock domain, record "landlock (host
// exec)"), with the agent network off and on, and sh -c CMD by itself
// for scale; for CMD true and a small workload. It prints the medians
// and the ratio of the confined to the direct (target: at most 1.3x).
// `make bench` runs it; it is skipped otherwise.
func TestBenchHostExec(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	d := startDaemon(t)
	d.setAgentShell(t, false)
	project := d.dir(t, "bench-project")
	code, secret, _ := d.cli(t, nil, "tokens", "add", "--tools", "all", "bench")
	if code != 0 {
		t.Fatal("tokens add")
	}
	ownerTok, err := os.ReadFile(filepath.Join(d.root, "config", "senclaw", "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	owner := "SENCLAW_TOKEN=" + strings.TrimSpace(string(ownerTok))
	agent := "SENCLAW_TOKEN=" + strings.TrimSpace(secret)
	process := func(env string, argv ...string) func() error {
		return func() error {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir, cmd.Env = project, append(append([]string{}, d.env...), env)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%v: %v %s", argv, err, out.String())
			}
			return nil
		}
	}
	for _, network := range []bool{false, true} {
		p, err := d.c.Policy(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		p.ExecNetwork = network
		if _, err := d.c.SetPolicy(t.Context(), *p); err != nil {
			t.Fatal(err)
		}
		for _, command := range []string{"true", "ls -lR /usr/share/man >/dev/null; sort /etc/services | sha256sum >/dev/null"} {
			shell := []string{d.bin, "agent-shell", "--agent", "claude-code", "--project", project, "-c", command}
			kinds := []struct {
				name string
				run  func() error
				took []time.Duration
			}{
				{name: "owner, direct", run: process(owner, shell...)},
				{name: "agent, landlock (host exec)", run: process(agent, shell...)},
				{name: "sh -c alone", run: process("", "/bin/sh", "-c", command)},
			}
			if err := kinds[1].run(); err != nil {
				t.Fatal(err)
			}
			if r := d.lastRun(t); r.Isolation != "landlock (host exec)" {
				t.Fatalf("the agent's run is %q, want landlock (host exec)", r.Isolation)
			}
			for i := 0; i < 45; i++ {
				for k := range kinds {
					start := time.Now()
					if err := kinds[k].run(); err != nil {
						t.Fatal(err)
					}
					if i >= 5 {
						kinds[k].took = append(kinds[k].took, time.Since(start))
					}
				}
			}
			direct, confined, alone := benchtest.Median(kinds[0].took), benchtest.Median(kinds[1].took), benchtest.Median(kinds[2].took)
			fmt.Printf("BENCH host exec, agent network %v, %q: landlock (host exec) %v, direct %v, ratio %.2fx (target <= 1.3x); sh -c alone %v\n",
				network, command, confined, direct, float64(confined)/float64(direct), alone)
		}
	}
}
