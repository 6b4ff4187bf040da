package docker

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
