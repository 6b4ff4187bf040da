package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends/bwrap"
)

// TestBenchEngineVersusRawBwrap measures, in one run, the median wall time
// of `true` through the engine (a persistent sandbox, and a one-shot one)
// against raw bwrap with the same binds and namespaces, and prints the
// ratios. Run it with `make bench`; it is skipped otherwise.
func TestBenchEngineVersusRawBwrap(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1 (make bench)")
	}
	e := bwrapEngine(t)
	sb, err := e.Create(context.Background(), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.planFor(sb, RunRequest{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := e.spec(p, &RunRecord{ID: "bench", Backend: "bwrap"})
	if err != nil {
		t.Fatal(err)
	}
	raw := rawArgs(bwrap.Args(spec, bwrap.DetectHost(spec), bwrap.FDs{}))
	bwrapPath, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	runRaw := func() error {
		cmd := exec.Command(bwrapPath, raw...)
		cmd.Env = spec.Env
		// The engine captures output; so does the raw run, to compare
		// like with like.
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if spec.User != nil {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: spec.User.UID, Gid: spec.User.GID, Groups: []uint32{}}
		}
		return cmd.Run()
	}
	runEngine := func() error {
		res, err := e.Exec(context.Background(), sb.ID, RunRequest{Argv: []string{"true"}})
		if err == nil && !res.Record.OK() {
			err = fmt.Errorf("run failed: %+v", res.Record)
		}
		return err
	}
	runOnce := func() error {
		res, err := e.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Argv: []string{"true"}})
		if err == nil && !res.Record.OK() {
			err = fmt.Errorf("run failed: %+v", res.Record)
		}
		return err
	}
	// The daemon keeps one-shot sandboxes ready (ahead.go): the same
	// one-shot on an engine that does, in the same turns.
	ready := aheadEngine(t, DefaultAheadOneShots)
	runAhead := func() error {
		res, err := ready.RunOnce(context.Background(), SandboxConfig{}, RunRequest{Argv: []string{"true"}})
		if err == nil && (!res.Record.OK() || res.Record.AheadID == "") {
			err = fmt.Errorf("run failed or did not take a sandbox made ahead: %+v", res.Record)
		}
		return err
	}
	const n = 60
	var tRaw, tEngine, tOnce, tAhead []time.Duration
	for i := 0; i < n+5; i++ {
		for _, m := range []struct {
			f   func() error
			out *[]time.Duration
		}{{runRaw, &tRaw}, {runEngine, &tEngine}, {runOnce, &tOnce}, {runAhead, &tAhead}} {
			start := time.Now()
			if err := m.f(); err != nil {
				t.Fatal(err)
			}
			if i >= 5 { // warm-up
				*m.out = append(*m.out, time.Since(start))
			}
		}
	}
	mr, me, mo, ma := median(tRaw), median(tEngine), median(tOnce), median(tAhead)
	t.Logf("raw bwrap true:                 median %v", mr)
	t.Logf("engine, persistent sandbox:     median %v  ratio %.2fx (target <= 1.30x)", me, float64(me)/float64(mr))
	t.Logf("engine, one-shot sandbox:       median %v  ratio %.2fx", mo, float64(mo)/float64(mr))
	t.Logf("engine, one-shot made ahead:    median %v  ratio %.2fx", ma, float64(ma)/float64(mr))
	fmt.Printf("BENCH bwrap-true raw=%v engine=%v ratio=%.2f oneshot=%v ratio=%.2f ahead=%v ratio=%.2f\n", mr, me, float64(me)/float64(mr), mo, float64(mo)/float64(mr), ma, float64(ma)/float64(mr))
}

// rawArgs drops the engine's handshake options, which raw bwrap does not
// need, and keeps every bind and namespace.
func rawArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--seccomp", "--info-fd", "--block-fd":
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
