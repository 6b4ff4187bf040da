package docker

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/senclaw/sandbox/internal/testutil"
)

// testTerminal opens a pseudo-terminal pair as the engine does
// (close-on-exec both).
func testTerminal(t *testing.T) (master, slave *os.File) {
	t.Helper()
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	master = os.NewFile(uintptr(mfd), "ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		t.Fatal(errno)
	}
	slave = os.NewFile(sfd, "pts")
	t.Cleanup(func() { slave.Close() })
	if err := unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// TestRelayTerminalIsNeverInherited: the engine's copy of a person's
// terminal is close-on-exec from the instant it exists. A dup marked
// close-on-exec only after it was made leaked the terminal, for that
// moment, into whatever the engine started at the same time (another
// run's bwrap or helper, which keeps what it inherits): that run could
// read the keys typed in the shell and write to the person's screen.
func TestRelayTerminalIsNeverInherited(t *testing.T) {
	_, slave := testTerminal(t)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			f, _, _, err := relayTerminal(slave)
			if err != nil {
				t.Error(err)
				return
			}
			f.Close()
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		out, err := exec.Command("/bin/sh", "-c", `ls -l /proc/$$/fd`).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if strings.Contains(string(out), "/dev/pts/") || strings.Contains(string(out), "/dev/ptmx") {
			t.Fatalf("a process started while the engine relayed a terminal inherited it (start %d):\n%s", i, out)
		}
	}
}

// TestTerminalRunRefusesTIOCSTI: a run with a terminal (docker exec -it)
// has one on its standard input, and still cannot push input into it:
// the container's seccomp profile carries senclaw's denial of TIOCSTI.
func TestTerminalRunRefusesTIOCSTI(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	b := newTestBackend(t, nil)
	spec := newSpec(t, b, "true")
	data, err := os.ReadFile(sysprobePath(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(spec.Workspace, "sysprobe"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	master, slave := testTerminal(t)
	var out testutil.SyncBuffer
	go func() { _, _ = io.Copy(&out, master) }()
	s := *spec
	s.Argv = []string{"/bin/sh", "-c", `test -t 0 && echo on-a-tty; /work/sysprobe fionread; /work/sysprobe tiocsti; /work/sysprobe tiocsti_high`}
	s.Terminal, s.TerminalFDs = slave, []int{0, 1, 2}
	p, err := b.Start(context.Background(), &s)
	if err != nil {
		t.Fatal(err)
	}
	slave.Close()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	want := "on-a-tty\r\nok\r\nEPERM\r\nEPERM\r\n"
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := out.String(); got != want {
		t.Fatalf("the terminal showed %q, want %q", got, want)
	}
}
