//go:build linux

package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnOrdinaryUserLearnsAPolicy is the policy files as a person on a
// desktop has them: the second user, its engine without cgroups
// (rlimits only), its own ~/.config/senclaw/policy.json that lets runs
// reach two of this machine's ports. In a project of its own it runs
// senclaw run --learn --write on a python3 script that reads a file of
// the project, calls one port and holds 64 MB; the proposal names that
// port alone and a memory limit, policy check allows the script (exit
// 0), run --here runs it under the proposal (RLIMIT_DATA from the
// proposed memory), and a variant that calls the other port is refused.
func TestAnOrdinaryUserLearnsAPolicy(t *testing.T) {
	t.Parallel()
	d := startDesktopUser(t, true)
	serve := func(says string) int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, says) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return ln.Addr().(*net.TCPAddr).Port
	}
	one, two := serve("one"), serve("two")
	project := filepath.Join(d.data+"-project", "fetch")
	d.u.Run(t, "/bin/mkdir", "-p", project)
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(project)) })
	d.u.Run(t, "/bin/sh", "-c", fmt.Sprintf(`cd %q && echo input > input.txt && cat > fetch.py <<'EOF'
import sys, time, urllib.request
held = b"x" * (64 << 20)
time.sleep(0.3)
got = urllib.request.urlopen("http://127.0.0.1:%%s/" %% sys.argv[1], timeout=10).read().decode()
open("out.txt", "w").write(open("input.txt").read().strip() + " " + got)
EOF`, project))
	in := func(args ...string) (int, string, string) {
		cmd := d.command(args...)
		cmd.Dir = project
		return runCmd(t, cmd, "")
	}
	// The owner's file as the engine wrote it, with the two ports added.
	owner := filepath.Join(d.config, "senclaw", "policy.json")
	if code, out, errOut := in("policy", "check", "--", "true"); code != 0 { // the engine writes the file when it has none
		t.Fatalf("senclaw policy check: exit %d\n%s\n%s", code, out, errOut)
	}
	d.u.Run(t, "/usr/bin/python3", "-c", fmt.Sprintf(`import json, sys
p = json.load(open(%q)); p["ports"] = {"loopback": [%d, %d]}
json.dump(p, open(%q, "w"), indent=2)`, owner, one, two, owner))

	code, out, errOut := in("run", "--learn", "--write", "--", "python3", "fetch.py", fmt.Sprint(one))
	if code != 0 {
		t.Fatalf("senclaw run --learn --write: exit %d\n%s\n%s", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(project, ".senclaw", "policy.json"))
	if err != nil {
		t.Fatalf("the proposal was not written: %v\n%s", err, errOut)
	}
	var prop struct {
		FsMode string `json:"fsMode"`
		Ports  struct {
			Loopback []int `json:"loopback"`
		} `json:"ports"`
		Limits struct {
			MemoryMb int `json:"memoryMb"`
		} `json:"limits"`
	}
	if err := json.Unmarshal(data, &prop); err != nil {
		t.Fatal(err)
	}
	if prop.FsMode != "strict" || len(prop.Ports.Loopback) != 1 || prop.Ports.Loopback[0] != one || prop.Limits.MemoryMb < 128 {
		t.Fatalf("the proposal:\n%s\nthe learn run said:\n%s", data, errOut)
	}
	if code, out, errOut := in("policy", "check", "--", "python3", "fetch.py"); code != 0 {
		t.Fatalf("senclaw policy check under the proposal: exit %d\n%s\n%s", code, out, errOut)
	}
	os.Remove(filepath.Join(project, "out.txt"))
	if code, out, errOut := in("run", "--here", "--", "python3", "fetch.py", fmt.Sprint(one)); code != 0 {
		t.Fatalf("senclaw run --here under the proposal: exit %d\n%s\n%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(project, "out.txt")); string(got) != "input one" {
		t.Fatalf("out.txt %q", got)
	}
	code, _, errOut = in("run", "--here", "--", "python3", "fetch.py", fmt.Sprint(two))
	// Not forwarded into its network namespace: nothing answers there.
	if code == 0 || !strings.Contains(errOut, "Connection refused") {
		t.Fatalf("the variant reaching port %d: exit %d\n%s", two, code, errOut)
	}
	var runs []struct {
		Enforced []string `json:"enforced"`
	}
	if err := json.Unmarshal([]byte(d.mustRun(t, "runs", "--json", "--limit", "1")), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || !strings.Contains(strings.Join(runs[0].Enforced, "; "), "RLIMIT_DATA") {
		t.Errorf("the run under the proposal does not say its memory held by RLIMIT_DATA: %+v", runs)
	}
	t.Logf("the proposal, as the second user:\n%s", data)
}
