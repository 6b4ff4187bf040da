package bwrap

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/netfwd"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/internal/testutil"
)

// startAheadAndGo makes spec's sandbox ahead, waits a little (the sandbox
// is whole and idle), hands it argv and waits for the end.
func startAheadAndGo(t *testing.T, b *Backend, spec *backends.Spec, argv ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &errb
	spec.Argv = nil
	p, err := b.StartAhead(context.Background(), spec)
	must(t, err)
	time.Sleep(50 * time.Millisecond)
	must(t, p.Go(argv))
	done := make(chan struct{})
	var st backends.ExitStatus
	go func() { st, err = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.Kill()
		<-done
		t.Fatal("the command handed to the sandbox made ahead did not end")
	}
	return result{out.String(), errb.String(), st, err, p}
}

// A sandbox made ahead runs the command it is handed as Start would have
// run it: the same user, environment, directory, descriptors, filter,
// privileges and mounts (but for the forwarder's, which it waited in).
func TestASandboxMadeAheadIsTheSandboxStartMakes(t *testing.T) {
	testutil.RequireBwrap(t)
	fwd := netfwdtest.Path(t)
	b := New(Options{})
	probe := `id; pwd; env | sort; ls /proc/self/fd; grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs|Cap(Inh|Prm|Eff|Bnd|Amb)):' /proc/self/status;` +
		` awk '{print $5, $6}' /proc/self/mountinfo | sort; sed 's/[0-9a-f]*$//' /proc/self/cgroup; ulimit -a`
	for _, u := range sandboxUsers(t) {
		for _, guarded := range []bool{false, true} {
			t.Run(u.Name+map[bool]string{false: "/plain", true: "/guarded"}[guarded], func(t *testing.T) {
				mk := func() *backends.Spec {
					ws := newTestDirs(t, u).ws
					spec := newSpec(t, u, ws, "/bin/sh", "-c", probe)
					spec.Helper = fwd
					if guarded {
						spec.UnixGuard = &backends.UnixGuard{Forwarder: fwd}
					}
					spec.Limits = backends.Limits{Pids: 64, MemoryMB: 256}
					return spec
				}
				s1 := mk()
				started := run(t, b, s1)
				s2 := mk()
				ahead := startAheadAndGo(t, b, s2, "/bin/sh", "-c", probe)
				if started.err != nil || ahead.err != nil || started.status.Code != 0 || ahead.status.Code != 0 {
					t.Fatalf("start: %v %+v %s\nahead: %v %+v %s", started.err, started.status, started.stderr, ahead.err, ahead.status, ahead.stderr)
				}
				norm := func(s string, spec *backends.Spec) []string {
					s = strings.ReplaceAll(s, spec.Workspace, "WS")
					s = strings.ReplaceAll(s, spec.RunID, "RUN")
					s = regexp.MustCompile(`net:\[\d+\]`).ReplaceAllString(s, "net:[N]")
					var lines []string
					for _, l := range strings.Split(s, "\n") {
						if !strings.HasPrefix(l, netfwd.BinaryPath+" ") {
							lines = append(lines, l)
						}
					}
					return lines
				}
				a, c := norm(started.stdout, s1), norm(ahead.stdout, s2)
				if !slices.Equal(a, c) {
					t.Errorf("the sandbox made ahead differs from Start's:\nStart:\n%s\nahead:\n%s", strings.Join(a, "\n"), strings.Join(c, "\n"))
				}
				if !strings.Contains(ahead.stdout, "NoNewPrivs:\t1") || !strings.Contains(ahead.stdout, "Seccomp:\t2") {
					t.Errorf("the command made ahead is not under the filter:\n%s", ahead.stdout)
				}
				if ahead.stderr != "" {
					t.Errorf("stderr: %q", ahead.stderr)
				}
			})
		}
	}
}

// What the command says and how it ends reach the engine as Start's do:
// its output, its exit code, and a missing command's 127.
func TestASandboxMadeAheadReportsLikeStart(t *testing.T) {
	testutil.RequireBwrap(t)
	fwd := netfwdtest.Path(t)
	b := New(Options{})
	u := sandboxUsers(t)[0]
	spec := guardedSpec(t, u, fwd)
	r := startAheadAndGo(t, b, spec, "sh", "-c", `echo out; echo err >&2; echo "$SENCLAW_TEST"; exit 3`)
	if r.err != nil || r.status.Code != 3 || r.stdout != "out\n1\n" || r.stderr != "err\n" {
		t.Errorf("got %v %+v stdout %q stderr %q", r.err, r.status, r.stdout, r.stderr)
	}
	spec = guardedSpec(t, u, fwd)
	r = startAheadAndGo(t, b, spec, "no-such-command-here", "x")
	if r.status.Code != 127 || r.stderr != "senclaw: not found in the sandbox: no-such-command-here\n" {
		t.Errorf("a missing command: %+v %q", r.status, r.stderr)
	}
	spec = guardedSpec(t, u, fwd)
	r = startAheadAndGo(t, b, spec, "sh", "-c", "kill -9 $$")
	if r.status.Signal == "" {
		t.Errorf("a command killed by a signal: %+v", r.status)
	}
}

// A sandbox no run takes is given up whole: Kill ends it at once, the
// forwarder runs nothing, and no command can be handed afterwards; a
// command with a NUL is refused before anything is written.
func TestASandboxMadeAheadGivenUpRunsNothing(t *testing.T) {
	testutil.RequireBwrap(t)
	fwd := netfwdtest.Path(t)
	b := New(Options{})
	u := sandboxUsers(t)[0]
	spec := guardedSpec(t, u, fwd)
	spec.Argv = nil
	var errb bytes.Buffer
	spec.Stderr = &errb
	p, err := b.StartAhead(context.Background(), spec)
	must(t, err)
	if err := p.Go([]string{"echo", "a\x00b"}); err == nil {
		t.Error("a command holding a NUL was handed over")
	}
	start := time.Now()
	must(t, p.Kill())
	if _, err := p.Wait(); err != nil {
		t.Log(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("giving the sandbox up took %v", d)
	}
	if err := p.Go([]string{"true"}); err == nil {
		t.Error("a command was handed to a sandbox given up")
	}
	entries, _ := os.ReadDir(spec.Workspace)
	if len(entries) != 0 {
		t.Errorf("the workspace of a sandbox that ran nothing has %v", entries)
	}
	for _, bad := range []*backends.Spec{{Argv: []string{"true"}}, {Terminal: os.Stdin}} {
		if _, err := b.StartAhead(context.Background(), bad); err == nil {
			t.Errorf("StartAhead took %+v", bad)
		}
	}
}

// startAheadWaiting makes a guarded sandbox ahead, waiting for its command.
func startAheadWaiting(t *testing.T) backends.AheadProcess {
	t.Helper()
	testutil.RequireBwrap(t)
	spec := guardedSpec(t, sandboxUsers(t)[0], netfwdtest.Path(t))
	spec.Argv = nil
	p, err := New(Options{}).StartAhead(context.Background(), spec)
	must(t, err)
	return p
}

// forwarderOf finds the pid of the forwarder waiting in p's sandbox.
func forwarderOf(t *testing.T, p backends.Process) int {
	t.Helper()
	for i := 0; i < 200; i++ {
		for _, pid := range p.Pids() {
			comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
			if strings.TrimSpace(string(comm)) == "senclaw-netfwd" {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no forwarder among %v", p.Pids())
	return 0
}

// A sandbox that does not read its command (stopped, or stuck) is still
// given up at once: Kill does not wait for a Go that blocks on a command
// larger than the pipe holds, and that Go then fails.
func TestKillEndsASandboxMadeAheadThatDoesNotRead(t *testing.T) {
	p := startAheadWaiting(t)
	if !p.Waiting() {
		t.Fatal("a sandbox just made ahead does not wait")
	}
	// Held by a pidfd, so that the clean-up (should Kill hang) can never
	// signal a pid reused meanwhile.
	fwdFD, err := unix.PidfdOpen(forwarderOf(t, p), 0)
	must(t, err)
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(fwdFD, unix.SIGKILL, nil, 0)
		unix.Close(fwdFD)
	})
	must(t, unix.PidfdSendSignal(fwdFD, unix.SIGSTOP, nil, 0))
	went := make(chan error, 1)
	go func() { went <- p.Go([]string{"echo", strings.Repeat("x", 1<<20)}) }()
	select {
	case err := <-went:
		t.Fatalf("Go returned while the forwarder was stopped: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	killed := make(chan error, 1)
	go func() { killed <- p.Kill() }()
	select {
	case err := <-killed:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Kill waited for a Go that blocks")
	}
	select {
	case err := <-went:
		if err == nil {
			t.Error("a command was handed to a sandbox that was killed before it read it")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Go still blocks after Kill")
	}
	p.Wait()
	if p.Waiting() {
		t.Error("a sandbox given up still waits")
	}
}

// A sandbox made ahead that dies while it waits (killed from outside)
// says so: it is no longer Waiting, and Go fails.
func TestASandboxMadeAheadThatDiedIsNotWaiting(t *testing.T) {
	p := startAheadWaiting(t)
	must(t, syscall.Kill(p.Pid(), syscall.SIGKILL))
	p.Wait()
	if p.Waiting() {
		t.Error("a sandbox that died still waits")
	}
	if err := p.Go([]string{"true"}); err == nil {
		t.Error("a command was handed to a sandbox that died")
	}
}
