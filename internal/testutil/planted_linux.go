package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// PlantedLibrary is a shared library that sandboxed code could leave in
// its workspace for a host-side program to load (through LD_PRELOAD or
// LD_LIBRARY_PATH in the run's environment). Its constructor appends one
// line per process that loads it to Log, saying who and where the process
// is: "uid=U netns=N comm=C".
type PlantedLibrary struct {
	Path string
	Log  string
}

// PlantLibrary builds, with gcc, the library dir/name (its soname name)
// logging to dir/planted.log. stubs are functions it defines (returning
// -1), so that a program that needs a library of that name still links
// against it and runs the constructor. Without gcc the test skips, except
// under CI=true, where it fails.
func PlantLibrary(t testing.TB, dir, name string, stubs ...string) PlantedLibrary {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gcc is required under CI: %v", err)
		}
		t.Skipf("gcc not installed: %v", err)
	}
	lib := PlantedLibrary{Path: filepath.Join(dir, name), Log: filepath.Join(dir, "planted.log")}
	var src strings.Builder
	src.WriteString(`#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
	struct stat st;
	unsigned long long ns = 0;
	char comm[64] = "?";
	if (stat("/proc/self/ns/net", &st) == 0) ns = st.st_ino;
	int c = open("/proc/self/comm", O_RDONLY);
	if (c >= 0) {
		ssize_t n = read(c, comm, sizeof comm - 1);
		if (n > 0) comm[n - 1] = 0;
		close(c);
	}
	int fd = open(LOG, O_WRONLY | O_APPEND | O_CREAT, 0666);
	if (fd >= 0) {
		dprintf(fd, "uid=%d netns=%llu comm=%s\n", (int)getuid(), ns, comm);
		close(fd);
	}
}
`)
	for _, s := range stubs {
		fmt.Fprintf(&src, "int %s(void) { return -1; }\n", s)
	}
	cfile := filepath.Join(t.TempDir(), "planted.c")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib.Path, "-Wl,-soname,"+name,
		"-DLOG="+strconv.Quote(lib.Log), cfile).CombinedOutput()
	if err != nil {
		t.Fatalf("building the planted library: %v\n%s", err, out)
	}
	// Sandboxed code and host-side programs of any user may load it and log.
	if err := os.WriteFile(lib.Log, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{lib.Path, lib.Log} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return lib
}

// Loads returns the lines of the log: one per process that ran the
// library's constructor.
func (l PlantedLibrary) Loads(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(l.Log)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

// OnHost returns the loads that happened outside a sandbox: in the test's
// own network namespace, or as root.
func (l PlantedLibrary) OnHost(t testing.TB) []string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &st); err != nil {
		t.Fatal(err)
	}
	hostNS := "netns=" + strconv.FormatUint(st.Ino, 10)
	var out []string
	for _, line := range l.Loads(t) {
		if strings.Contains(line, " "+hostNS+" ") || strings.HasPrefix(line, "uid=0 ") {
			out = append(out, line)
		}
	}
	return out
}
