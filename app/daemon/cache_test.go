package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/pkgcache"
	"github.com/senclaw/sandbox/internal/testutil"
)

// TestTheCacheVerbs: a run --here fills its project's package cache and
// a persistent sandbox its own; senclaw cache ls lists both with their
// size, cache clear SANDBOX empties one, cache clear every one, and the
// mistakes get exit 2 with what to do.
func TestTheCacheVerbs(t *testing.T) {
	testutil.RequireBwrap(t)
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := senclaw(t, args...)
		if code != want {
			t.Fatalf("senclaw %s: exit %d (want %d)\nstdout %s\nstderr %s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}
	project := testutil.SandboxDir(t, "senclaw-cache-project-")
	os.Chmod(project, 0o755)
	t.Chdir(project)
	fill := `mkdir -p "$npm_config_cache" && head -c 100000 /dev/urandom > "$npm_config_cache/blob" && echo "$npm_config_cache"`
	if out, _ := run(0, "run", "--here", "--", "sh", "-c", fill); strings.TrimSpace(out) != "/tmp/senclaw-cache/npm" {
		t.Fatalf("run --here's npm cache: %q", out)
	}
	id, _ := run(0, "create", "--name", "cached")
	id = strings.TrimSpace(id)
	run(0, "run", "--sandbox", id, "--", "sh", "-c", fill)

	list := func() map[string]int64 {
		t.Helper()
		out, _ := run(0, "cache", "ls", "--json")
		var caches []struct {
			Kind, Project, SandboxID string
			Bytes                    int64
		}
		if err := json.Unmarshal([]byte(out), &caches); err != nil {
			t.Fatalf("cache ls --json: %v %q", err, out)
		}
		got := map[string]int64{}
		for _, c := range caches {
			got[c.Kind+":"+c.Project+c.SandboxID] = c.Bytes
		}
		return got
	}
	got := list()
	if got["project:"+project] < 100000 || got["sandbox:"+id] < 100000 {
		t.Fatalf("cache ls: %v", got)
	}
	if out, _ := run(0, "cache", "ls"); !strings.Contains(out, project) || !strings.Contains(out, "KiB") {
		t.Errorf("cache ls:\n%s", out)
	}
	if out, _ := run(0, "cache", "clear", "cached"); !strings.Contains(out, "cleared the package caches of cached") {
		t.Errorf("cache clear cached: %q", out)
	}
	if got := list(); got["sandbox:"+id] != 0 || got["project:"+project] < 100000 {
		t.Errorf("after cache clear cached: %v", got)
	}
	run(0, "cache", "clear")
	if got := list(); got["project:"+project] > 8192 {
		t.Errorf("after cache clear: %v", got)
	}
	if _, errOut := run(2, "cache", "clear", ""); !strings.Contains(errOut, "no id given") {
		t.Errorf("cache clear \"\": %q", errOut)
	}
	if _, errOut := run(2, "cache", "clear", "a", "b"); !strings.Contains(errOut, "usage: senclaw cache clear [SANDBOX]") {
		t.Errorf("cache clear a b: %q", errOut)
	}
	if _, errOut := run(2, "cache", "clear", "nosuchsandbox"); !strings.Contains(errOut, "nosuchsandbox") {
		t.Errorf("cache clear nosuchsandbox: %q", errOut)
	}
}

// TestAnotherUserReadsNoProjectsCaches: the package caches a run --here
// fills are the engine's, out of other local users' reach: they cannot
// list the projects there are, nor read a cache whose key (the hash of
// the project's path) they can work out. Before, the caches' folders
// were 0755 and another user read every project's npm, pip and Go
// caches (private packages and modules among them).
func TestAnotherUserReadsNoProjectsCaches(t *testing.T) {
	testutil.RequireBwrap(t)
	other := testutil.SecondUser(t)
	data := cliEnv(t)
	defer stopServed(t, serveInProcess(t, data))
	project := testutil.SandboxDir(t, "senclaw-cache-private-")
	os.Chmod(project, 0o755)
	t.Chdir(project)
	fill := `mkdir -p "$npm_config_cache" && echo private > "$npm_config_cache/blob"`
	if code, out, errOut := senclaw(t, "run", "--here", "--", "sh", "-c", fill); code != 0 {
		t.Fatalf("run --here: exit %d\n%s%s", code, out, errOut)
	}
	caches := filepath.Join(data, "caches")
	blob := filepath.Join(caches, pkgcache.ProjectKey(project), "cache", "npm", "blob")
	if b, err := os.ReadFile(blob); err != nil || strings.TrimSpace(string(b)) != "private" {
		t.Fatalf("the run's cache file %s: %q %v", blob, b, err)
	}
	for _, args := range [][]string{{"/bin/ls", caches}, {"/bin/cat", blob}} {
		if out, err := other.Command(args[0], args[1:]...).CombinedOutput(); err == nil {
			t.Errorf("%s as %s: %q, want it refused", strings.Join(args, " "), other.Name, out)
		}
	}
	// The caches still serve the next run.
	if code, out, errOut := senclaw(t, "run", "--here", "--", "sh", "-c", `cat "$npm_config_cache/blob"`); code != 0 || strings.TrimSpace(out) != "private" {
		t.Errorf("the next run --here reads its cache: exit %d %q %s", code, out, errOut)
	}
}
