package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestREADMEUsingItRuns runs the README's "Using it" block as a shell
// script (set -eu: the first example that fails fails the test) with the
// senclaw of this test binary, against a daemon it starts on a data dir of
// its own (with the real bwrap): an example that no longer works as
// written fails here. The script runs in an empty project folder, with
// ~/data a folder of one file. Two things are changed before it runs: port
// 8000 becomes a free one (the machine is shared), and a line that reaches
// a host on the Internet is left out (tests talk to this machine only).
func TestREADMEUsingItRuns(t *testing.T) {
	requireTools(t, "bwrap", "python3", "bash")
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := shellBlock(t, string(readme), "## Using it")
	port := freePort(t)
	var script, skipped []string
	for _, line := range strings.Split(block, "\n") {
		if internet.MatchString(line) {
			skipped = append(skipped, line)
			continue
		}
		script = append(script, strings.ReplaceAll(line, "8000", port))
	}
	if len(skipped) > 1 {
		t.Fatalf("more than one example reaches the Internet, which this test cannot run: %q", skipped)
	}

	data := cliEnv(t)
	root := filepath.Dir(data)
	bin := filepath.Join(root, "bin")
	home := filepath.Join(root, "home")
	project := filepath.Join(root, "project")
	for _, d := range []string{bin, filepath.Join(home, "data"), project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The sandbox user (nobody, under a root engine) writes the project.
	if err := os.Chmod(project, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "data", "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n" + asSenclaw + "=1 exec " + strconv.Quote(self) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "senclaw"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+home, "SENCLAW_DATA_DIR="+data, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	daemon := exec.Command(filepath.Join(bin, "senclaw"), "serve", "--listen", "127.0.0.1:0")
	daemon.Env = env
	var daemonLog bytes.Buffer
	daemon.Stdout, daemon.Stderr = &daemonLog, &daemonLog
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = daemon.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = daemon.Process.Kill()
		<-exited
	})
	sock := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "senclaw", "api.sock")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not start:\n%s", daemonLog.String())
		}
	}

	sh := exec.Command("bash", "-c", "set -eux\n"+strings.Join(script, "\n"))
	sh.Dir, sh.Env, sh.Stdin = project, env, nil
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's Using it block fails as written: %v\n%s\n--- the daemon's log:\n%s", err, out, daemonLog.String())
	}
	for _, want := range []string{"42\n", "hello.txt\n", "kept\n", "ISOLATION", "when stopped"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the script's output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(project, "files.txt")); err != nil {
		t.Errorf("run --here did not write into the current folder: %v", err)
	}
	// Its last line stopped the daemon.
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Error("senclaw stop did not stop the daemon")
	}
}

// internet matches a line that reaches a host other than this machine.
var internet = regexp.MustCompile(`https?://(?:[a-z0-9-]+\.)+[a-z]{2,}`)

// shellBlock returns the first ```sh block after heading in md.
func shellBlock(t *testing.T, md, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("README.md's %q has no sh block", heading)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("README.md's %q block does not end", heading)
	}
	return block
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
