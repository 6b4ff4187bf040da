package app

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestSandboxLimitsHoldAcrossBackgroundRuns: at the engine, many
// background runs in one sandbox share the sandbox's process limit
// instead of getting it each.
func TestSandboxLimitsHoldAcrossBackgroundRuns(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("cgroup limits need a root engine on this cgroup v1 machine")
	}
	engines := []struct {
		name string
		make func(t *testing.T) *Engine
	}{{"bwrap", func(t *testing.T) *Engine { return bwrapEngine(t) }}, {"landlock", func(t *testing.T) *Engine { return landlockEngine(t) }}}
	for _, en := range engines {
		t.Run(en.name, func(t *testing.T) {
			t.Parallel()
			e := en.make(t)
			const pids, runs = 48, 24
			sb, err := e.Create(context.Background(), SandboxConfig{Pids: ptr(pids)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Stop(context.Background(), sb.ID) })
			// Each run wants sh and four sleeps (and bwrap's init): 24 runs
			// would hold well over a hundred processes.
			started := 0
			for i := 0; i < runs; i++ {
				if _, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: "sleep 60 & sleep 60 & sleep 60 & sleep 60 & wait", Background: true}); err == nil {
					started++
				}
			}
			if started == 0 {
				t.Fatal("no background run started")
			}
			most := 0
			for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
				st, err := e.Stats(context.Background(), sb.ID)
				if err != nil {
					t.Fatal(err)
				}
				most = max(most, len(st.Processes))
			}
			if most > pids {
				t.Errorf("%d background runs of a sandbox with pids %d held %d processes together", started, pids, most)
			}
		})
	}
}
