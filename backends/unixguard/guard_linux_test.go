package unixguard_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/backends/bwrap"
	"github.com/senclaw/sandbox/backends/netfwd/netfwdtest"
	"github.com/senclaw/sandbox/backends/tracer"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestOutsideSocketsAreRefusedInEveryMode runs the probe in every fs mode
// with the network off and on, as root's nobody and as an ordinary user:
// every way to a listening, world-writable socket outside the sandbox's
// own places is refused, and the sockets it makes itself, the proxy and
// the named socket work.
func TestOutsideSocketsAreRefusedInEveryMode(t *testing.T) {
	t.Parallel()
	requireGuard(t)
	for _, u := range testutil.SandboxUsers() {
		for _, mode := range []backends.FsMode{backends.FsOpen, backends.FsAllowlist, backends.FsStrict} {
			for _, network := range []bool{false, true} {
				name := u.Name + "/" + string(mode) + "/network_off"
				if network {
					name = u.Name + "/" + string(mode) + "/network_on"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					f := newFixture(t, u)
					want := map[string]string{
						"connect:" + filepath.Join(f.ws, "link.sock"):        "EACCES",
						"connect:" + filepath.Join(f.ws, "linkdir/out.sock"): "EACCES",
						"serve:" + filepath.Join(f.ws, "srv.sock"):           "hi",
						"serve:rel.sock":                 "hi",
						"serve:/tmp/own.sock":            "hi",
						"abstract":                       "hi",
						"tcp":                            "hi",
						"streampair":                     "ok",
						"dgram":                          "EACCES",
						"dgrampair":                      "EACCES",
						"rawunix":                        "EACCES",
						"seqpacket:" + f.outside[0].path: "ENOTCONN",
						"sendto:" + f.dgram.path:         "EACCES",
						"pairsendto:" + f.dgram.path:     "EACCES",
						"listener":                       "EBUSY",
						"peer:" + f.named.path:           "uid=" + strconv.Itoa(u.UID()),
					}
					if f.private != "" {
						want["connect:"+f.private] = "EACCES"
					}
					var spec *backends.Spec
					switch mode {
					case backends.FsOpen:
						rel, err := filepath.Rel(f.ws, f.outside[0].path)
						must(t, err)
						want["connect:"+f.outside[0].path] = "EACCES"
						want["procfd:"+f.outside[0].path] = "EACCES,EACCES"
						want["relative:"+f.ws+","+rel] = "EACCES"
						// The private /tmp hides the host's.
						want["connect:"+f.outside[1].path] = "ENOENT"
					case backends.FsAllowlist:
						want["connect:"+f.outside[0].path] = "EACCES"
						want["procfd:"+f.outside[0].path] = "EACCES,EACCES"
						// An allowlisted folder under /tmp is under the
						// private /tmp too.
						want["connect:"+f.outside[1].path] = "ENOENT"
					case backends.FsStrict:
						want["connect:"+filepath.Join(f.ws, "mnt/out.sock")] = "EACCES"
						want["procfd:"+filepath.Join(f.ws, "mnt/out.sock")] = "EACCES,EACCES"
						want["connect:"+filepath.Join(f.ws, "rw/out.sock")] = "EACCES"
						want["relative:"+f.ws+",mnt/out.sock"] = "EACCES"
					}
					if network {
						want["proxy:3128"] = "proxy"
					}
					var checks []string
					for c := range want {
						checks = append(checks, c)
					}
					spec = f.spec(t, u, mode, checks...)
					switch mode {
					case backends.FsAllowlist:
						spec.ReadPaths = []string{f.varDir, f.tmpDir}
					case backends.FsStrict:
						spec.Mounts = []backends.Mount{
							{Source: f.varDir, Target: "mnt", ReadOnly: true},
							{Source: f.tmpDir, Target: "rw"},
						}
					}
					if network {
						spec.Net = plumbing(t, u)
					}
					got := run(t, spec)
					for c, w := range want {
						if got[c] != w {
							t.Errorf("%s: got %q, want %q", c, got[c], w)
						}
					}
					f.noneReachedOutside(t)
				})
			}
		}
	}
}

// TestWithoutTheGuardTheOutsideIsReachable is the hole the guard closes,
// seen by the same probe in open mode (today's bwrap without the guard):
// each attack the other tests refuse gets through, so they can fail.
func TestWithoutTheGuardTheOutsideIsReachable(t *testing.T) {
	t.Parallel()
	requireGuard(t)
	u := testutil.SandboxUsers()[0]
	f := newFixture(t, u)
	race := "race:" + filepath.Join(f.ws, "race.sock") + "," + f.outside[0].path + ",3000"
	want := map[string]string{
		"connect:" + f.outside[0].path:                "ok",
		"connect:" + filepath.Join(f.ws, "link.sock"): "ok",
		"procfd:" + f.outside[0].path:                 "ok,ok",
		"sendto:" + f.dgram.path:                      "ok",
		"pairsendto:" + f.dgram.path:                  "ok",
	}
	checks := []string{race}
	for c := range want {
		checks = append(checks, c)
	}
	spec := f.spec(t, u, backends.FsOpen, checks...)
	spec.UnixGuard = nil
	got := run(t, spec)
	for c, w := range want {
		if got[c] != w {
			t.Errorf("unguarded %s: %q, want %q: the probe cannot show the hole", c, got[c], w)
		}
	}
	// The listener counts a connect once it has accepted it, which may
	// be a moment after the run ended on a loaded machine.
	for deadline := time.Now().Add(5 * time.Second); f.outside[0].accepted.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.outside[0].accepted.Load(); n < 3 {
		t.Errorf("unguarded, the racing connects reached the outside socket %d times: the race cannot show the hole", n-2)
	}
	// The receiver counts a datagram once it has read it, which may be
	// a moment after the run ended on a loaded machine.
	for deadline := time.Now().Add(5 * time.Second); f.dgram.accepted.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.dgram.accepted.Load(); n < 2 {
		t.Errorf("unguarded, %d datagrams arrived outside", n)
	}
}

// TestRacingThreadsNeverReachTheOutside connects thousands of times to a
// socket in the workspace while another thread rewrites the address to
// the outside socket (and to an inet address) and a third dup2s another
// Unix socket onto the descriptor: the engine connects only what it read
// and checked, so the outside socket never sees a connection.
func TestRacingThreadsNeverReachTheOutside(t *testing.T) {
	t.Parallel()
	requireGuard(t)
	for _, u := range testutil.SandboxUsers() {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, u)
			check := "race:" + filepath.Join(f.ws, "race.sock") + "," + f.outside[0].path + ",3000"
			got := run(t, f.spec(t, u, backends.FsOpen, check))
			n, err := strconv.Atoi(got[check])
			if err != nil || n == 0 {
				t.Errorf("race: %q connects succeeded; the allowed socket should have been reached", got[check])
			}
			f.noneReachedOutside(t)
			t.Logf("%d of 3000 racing connects reached the allowed sockets", n)
		})
	}
}

// TestUnderARealOrdinaryUser runs the tests above again in a test process
// of an ordinary user (uid 1000), when this one is root: the engine then
// connects from any thread as itself, and pidfd_getfd and
// process_vm_readv work on its own descendants only by ptrace rules.
func TestUnderARealOrdinaryUser(t *testing.T) {
	requireGuard(t)
	if os.Geteuid() != 0 {
		t.Log("this test process is an ordinary user's: the other tests ran as one")
		return
	}
	probe, err := probeBuild()
	must(t, err)
	dir := testutil.SandboxDirIn(t, "/tmp", "sgt-self-")
	self := filepath.Join(dir, "unixguard.test")
	data, err := os.ReadFile(os.Args[0])
	must(t, err)
	must(t, os.WriteFile(self, data, 0o755))
	netfwdtest.Path(t) // built here, found by the child by its hash
	cmd := exec.Command(self, "-test.count=1", "-test.v",
		"-test.run=^(TestOutsideSocketsAreRefusedInEveryMode|TestRacingThreadsNeverReachTheOutside)$")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=/tmp", "SGT_PROBE=" + probe, "CI=" + os.Getenv("CI")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestOutsideSocketsAreRefusedInEveryMode/ordinary_user/open/network_on") {
		t.Fatalf("the tests as uid 1000: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("the tests as uid 1000 skipped:\n%s", out)
	}
}

// TestAForwarderThatDoesNotHandOverTheGuardIsRefused: a forwarder that
// does not load the guard (one built before it; the command then never
// runs) or hands over something else than a seccomp listener gets the run
// refused. The runs are traced: a run with the network off that is not
// goes without the forwarder (the engine loads the guard itself).
func TestAForwarderThatDoesNotHandOverTheGuardIsRefused(t *testing.T) {
	t.Parallel()
	requireGuard(t)
	if ok, why := tracer.Available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tracing is required under CI: %s", why)
		}
		t.Skip(why)
	}
	u := testutil.SandboxUsers()[0]
	dir := testutil.SandboxDirIn(t, "", "sgt-fake-")
	pipe := filepath.Join(dir, "pipe-forwarder")
	// Sends the hello with a pipe instead of a listener, then runs the
	// command without waiting for the go-ahead (a little later, so that
	// the engine finds the sender alive and looks at the descriptor).
	must(t, os.WriteFile(pipe, []byte(`#!/usr/bin/python3
import os, socket, sys, time
fd = int(sys.argv[2])
r, w = os.pipe()
socket.send_fds(socket.socket(fileno=fd), [b"senclaw-unixguard/1"], [r])
time.sleep(2)
os.execvp(sys.argv[4], sys.argv[4:])
`), 0o755))
	for _, c := range []struct {
		name, forwarder, want string
		runs                  bool
	}{
		{"old_forwarder", "/usr/bin/true", "did not hand over", false},
		{"not_a_listener", pipe, "not a seccomp listener", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, u)
			marker := filepath.Join(f.ws, "ran")
			spec := f.spec(t, u, backends.FsStrict)
			spec.Argv = []string{"/bin/sh", "-c", "echo > " + marker}
			spec.UnixGuard.Forwarder = c.forwarder
			spec.Trace = func(backends.TraceEvent) {}
			b := bwrap.New(bwrap.Options{SandboxUser: u.Cred})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			p, err := b.Start(ctx, spec)
			if err == nil {
				p.Wait()
				t.Fatal("the run started")
			}
			if !strings.Contains(err.Error(), "Unix socket guard") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("want a refusal naming the guard and %q, got %v", c.want, err)
			}
			time.Sleep(200 * time.Millisecond)
			if _, err := os.Stat(marker); err == nil && !c.runs {
				t.Error("the command ran")
			}
		})
	}
}
