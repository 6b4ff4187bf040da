//go:build linux

package daemon

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/internal/testutil"
)

// TestCpStreamsLargeFilesAndFolders: senclaw cp copies a 50 MiB file
// into a sandbox and back out, and a folder of many files (one of them
// 5 MiB) both ways, byte for byte; a file larger than the room left in
// the sandbox's disk quota is refused and not kept. Before, a file past 2 MiB could not
// come out ("more than the file API reads at once") and a folder copy
// stopped at its first such file.
func TestCpStreamsLargeFilesAndFolders(t *testing.T) {
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))
	host := t.TempDir()
	big := make([]byte, 50<<20)
	rand.Read(big)
	must := func(args ...string) string {
		t.Helper()
		code, out, errOut := senclaw(t, args...)
		if code != 0 {
			t.Fatalf("senclaw %s: exit %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, out, errOut)
		}
		return out + errOut
	}
	must("create", "--name", "cpbig", "--disk", "512")
	if err := os.WriteFile(filepath.Join(host, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	must("cp", filepath.Join(host, "big.bin"), "cpbig:in/big.bin")
	if out := must("exec", "cpbig", "--", "sh", "-c", "wc -c < in/big.bin"); strings.TrimSpace(strings.Split(out, "\n")[0]) != fmt.Sprint(len(big)) {
		t.Fatalf("in the sandbox the file has %q bytes, want %d", out, len(big))
	}
	must("cp", "cpbig:in/big.bin", filepath.Join(host, "back.bin"))
	if back, _ := os.ReadFile(filepath.Join(host, "back.bin")); !bytes.Equal(back, big) {
		t.Fatalf("the 50 MiB file came back as %d bytes, not the same", len(back))
	}

	// The disk quota is the bound.
	must("create", "--name", "cpsmall", "--disk", "32")
	code, _, errOut := senclaw(t, "cp", filepath.Join(host, "big.bin"), "cpsmall:big.bin")
	if code == 0 || !strings.Contains(errOut, "disk quota") {
		t.Errorf("cp of 50 MiB into a 32 MB sandbox: exit %d, %q; want a refusal naming the quota", code, errOut)
	}
	if out := must("exec", "cpsmall", "--", "sh", "-c", "ls -A; echo end"); strings.Contains(out, "big.bin") {
		t.Errorf("the refused file was left in the sandbox: %q", out)
	}

	// A folder of many files, one large.
	tree := filepath.Join(host, "tree")
	want := map[string][]byte{"large.bin": big[:5<<20]}
	for i := range 200 {
		want[filepath.Join(fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%03d.txt", i))] = []byte(strings.Repeat(fmt.Sprint(i), i))
	}
	for name, content := range want {
		os.MkdirAll(filepath.Dir(filepath.Join(tree, name)), 0o755)
		if err := os.WriteFile(filepath.Join(tree, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := must("cp", tree, "cpbig:"); !strings.Contains(out, fmt.Sprintf("copied %d file(s)", len(want))) {
		t.Errorf("cp in: %q", out)
	}
	out := filepath.Join(host, "out")
	os.Mkdir(out, 0o755)
	if got := must("cp", "cpbig:tree", out); !strings.Contains(got, fmt.Sprintf("copied %d file(s)", len(want))) {
		t.Errorf("cp out: %q", got)
	}
	for name, content := range want {
		if got, err := os.ReadFile(filepath.Join(out, "tree", name)); err != nil || !bytes.Equal(got, content) {
			t.Fatalf("%s came back as %d bytes (%v), want %d", name, len(got), err, len(content))
		}
	}
}

// TestCpStreamsForAnOrdinaryUser: the same through an ordinary user's
// engine and the real senclaw: a 20 MiB file in and back out.
func TestCpStreamsForAnOrdinaryUser(t *testing.T) {
	d := newDesktopUser(t)
	big := make([]byte, 20<<20)
	rand.Read(big)
	src := filepath.Join(d.u.Home, fmt.Sprintf("cp-%d.bin", os.Getpid()))
	back := src + ".back"
	t.Cleanup(func() { os.Remove(src); os.Remove(back) })
	if err := os.WriteFile(src, big, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(src, d.u.UID, d.u.GID)
	d.mustRun(t, "create", "--name", "cpu")
	d.mustRun(t, "cp", src, "cpu:big.bin")
	d.mustRun(t, "cp", "cpu:big.bin", back)
	if got, _ := os.ReadFile(back); !bytes.Equal(got, big) {
		t.Fatalf("the 20 MiB file came back as %d bytes, not the same", len(got))
	}
}
