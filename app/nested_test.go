package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/senclaw/sandbox/app/autorun"
	"github.com/senclaw/sandbox/app/jailfs"
	"github.com/senclaw/sandbox/backends"
	"github.com/senclaw/sandbox/internal/testutil"
)

// gitInit makes a repository at dir with git.
func gitInit(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
}

// sandboxOwns lets whichever uid a sandbox of e gets write everything
// under dir (each sandbox of a root engine has a uid of its own, known
// only once it is made): folders 0777, files 0666.
func sandboxOwns(e *Engine, dir string) {
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		if fi.IsDir() {
			return os.Chmod(p, 0o777)
		}
		return os.Chmod(p, 0o666)
	})
}

// attackNested is a command that tries to write the agents' and git's
// files of the projects rels (relative to the run's folder), printing
// "wrote X" for each write that landed, then writes a file of its own.
func attackNested(rels ...string) string {
	var b strings.Builder
	for _, r := range rels {
		for _, f := range []string{".claude/settings.local.json", ".git/hooks/pre-commit", ".git/config", ".vscode/tasks.json"} {
			p := filepath.Join(r, f)
			fmt.Fprintf(&b, "(mkdir -p %s && echo evil > %s) 2>/dev/null && echo wrote %s; ", filepath.Dir(p), p, p)
		}
	}
	return b.String() + "echo mine > mine.txt && echo done"
}

// Projects nested in a folder a sandbox writes are protected as the
// folder itself is: a read-write mount of ~/work holding repositories
// (p/proj/.claude/settings.local.json, p/proj/.git/hooks/pre-commit),
// and an agent's project holding one, down to nestedProjectDepth levels
// (4); past nestedProjectLimit projects the run is refused with the
// reason; on the real bwrap backend.
func TestNestedProjectsAreProtected(t *testing.T) {
	e := bwrapEngine(t)
	work := testDir(t)
	nested := []string{"proj", "a/b/c/d"} // levels 1 and 4
	for _, r := range nested {
		gitInit(t, filepath.Join(work, r))
	}
	gitInit(t, filepath.Join(work, "a/b/c/d/e")) // level 5: past the depth
	must(t, os.MkdirAll(filepath.Join(work, "agent/.claude"), 0o755))
	sandboxOwns(e, work)
	must(t, os.Chmod(work, 0o777))
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap"), Mounts: []backends.Mount{{Source: work, Target: "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	var rels []string
	for _, r := range append(nested, "agent") {
		rels = append(rels, "p/"+r)
	}
	res, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: attackNested(append(rels, "p/a/b/c/d/e")...)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.Stdout, "done\n") {
		t.Fatalf("the run: %q %q", res.Stdout, res.Stderr)
	}
	for _, r := range rels {
		if strings.Contains(res.Stdout, "wrote "+r+"/.") {
			t.Errorf("the sandbox wrote what programs run code from in %s:\n%s", r, res.Stdout)
		}
	}
	for _, f := range []string{"proj/.claude", "proj/.vscode", "proj/.git/hooks/pre-commit", "a/b/c/d/.claude", "agent/.claude/settings.local.json"} {
		if _, err := os.Lstat(filepath.Join(work, f)); err == nil {
			t.Errorf("%s is on the host after the run", f)
		}
	}
	// What lies past nestedProjectDepth is not looked at (SECURITY.md).
	if !strings.Contains(res.Stdout, "wrote p/a/b/c/d/e/.git/hooks/pre-commit") {
		t.Errorf("a repository five levels down was protected, or not written: %q", res.Stdout)
	}

	// An agent's project with a repository in it.
	agentShellOn(t, e)
	project := testDir(t)
	gitInit(t, filepath.Join(project, "vendor/lib"))
	sandboxOwns(e, project)
	ar, err := e.AgentShell(context.Background(), AgentShellRequest{ProjectDir: project, Command: attackNested("vendor/lib")})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ar.Stdout, "wrote") || !strings.HasSuffix(ar.Stdout, "done\n") {
		t.Errorf("the agent shell in a project with a nested repository: %q %q", ar.Stdout, ar.Stderr)
	}

	// Past nestedProjectLimit: refused, nothing ran.
	s := e.Settings()
	s.NestedProjectLimit = 2
	if _, err := e.SetSettings(s); err != nil {
		t.Fatal(err)
	}
	_, err = e.Exec(context.Background(), sb.ID, RunRequest{Command: "echo ran > ran.txt"})
	if !IsRefused(err) || !strings.Contains(err.Error(), "nestedProjectLimit (2)") || !strings.Contains(err.Error(), work) {
		t.Errorf("a run past nestedProjectLimit: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.workspacesDir(), sb.ID, "ran.txt")); err == nil {
		t.Error("the run past the limit ran")
	}
	_, err = e.WriteFile(sb.ID, "p/new/.claude/settings.local.json", []byte("{}"))
	if err == nil || !strings.Contains(err.Error(), "nestedProjectLimit") {
		t.Errorf("the file API past nestedProjectLimit: %v", err)
	}
}

// In a read-write mount the sandbox user cannot write (root's 0755
// folder), bound through an idmapped mount, the sandbox writes as the
// folder's owner: what stands for a missing folder is made with the
// rights the sandbox has there, not the sandbox user's own (which could
// not make it, and would leave the sandbox free to).
func TestProtectionHoldsInAnIDMappedMount(t *testing.T) {
	testutil.RequireRoot(t)
	e := bwrapEngine(t)
	owned := testDir(t)
	must(t, os.Chmod(owned, 0o755))
	gitInit(t, filepath.Join(owned, "proj"))
	must(t, os.WriteFile(filepath.Join(owned, "readme"), []byte("x"), 0o644))
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap"), Mounts: []backends.Mount{{Source: owned, Target: "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	if note := e.CreateNotes(context.Background(), sb).Text(); !strings.Contains(note, "idmapped") {
		t.Fatalf("the mount is not idmapped: %q", note)
	}
	res, err := e.Exec(context.Background(), sb.ID, RunRequest{Command: attackNested("p", "p/proj")})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, "wrote") || !strings.HasSuffix(res.Stdout, "done\n") {
		t.Errorf("in an idmapped mount: %q %q", res.Stdout, res.Stderr)
	}
	for _, f := range []string{".claude", ".git", ".vscode", "proj/.claude", "proj/.vscode"} {
		if _, err := os.Lstat(filepath.Join(owned, f)); err == nil {
			t.Errorf("%s is on the host after the run", f)
		}
	}
}

// TestBenchNestedProjects measures the walk for nested projects on a
// folder as people have them: ten repositories with source trees, four
// with node_modules, one with a virtualenv. It prints how many folders
// the walk lists and what it costs, and the median of `true` in a
// sandbox with that folder mounted read-write at nestedProjectDepth 4
// against 0 (the folder alone), in alternate turns. Run it with
// SENCLAW_BENCH=1.
func TestBenchNestedProjects(t *testing.T) {
	if os.Getenv("SENCLAW_BENCH") == "" {
		t.Skip("set SENCLAW_BENCH=1")
	}
	e := bwrapEngine(t)
	work := testDir(t)
	dirs := 0
	mkdirs := func(base string, names ...string) {
		for _, n := range names {
			must(t, os.MkdirAll(filepath.Join(base, n), 0o755))
			dirs++
		}
	}
	letters := []string{"a", "b", "c", "d", "e"}
	for i := range 10 {
		repo := filepath.Join(work, fmt.Sprintf("repo%d", i))
		gitInit(t, repo)
		for _, a := range letters {
			for _, b := range letters {
				for _, c := range letters {
					mkdirs(repo, filepath.Join("src", a, b, c))
				}
			}
		}
		mkdirs(repo, "docs", "tests/unit", "tests/e2e")
		if i < 4 {
			for p := range 600 {
				mkdirs(repo, filepath.Join("node_modules", fmt.Sprintf("pkg%d", p), "lib"), filepath.Join("node_modules", fmt.Sprintf("pkg%d", p), "dist"))
			}
		}
		if i == 4 {
			for p := range 700 {
				mkdirs(repo, filepath.Join(".venv/lib/python3.12/site-packages", fmt.Sprintf("mod%d", p), "sub"))
			}
		}
	}
	sandboxOwns(e, work)
	must(t, os.Chmod(work, 0o777))
	err := e.inFolder(e.UnownedUser(), work, func(d *jailfs.Dir) error {
		start := time.Now()
		projects, listed, err := autorun.Nested(d, DefaultNestedProjectDepth, DefaultNestedProjectLimit)
		walk := time.Since(start)
		start = time.Now()
		entries, _, ferr := autorun.FindNested(d, work, projects)
		t.Logf("a tree of %d folders: the walk listed %d in %v and found %d projects; their %d entries took %v", dirs, listed, walk, len(projects), len(entries), time.Since(start))
		return errors.Join(err, ferr)
	})
	must(t, err)
	sb, err := e.Create(context.Background(), SandboxConfig{Backend: ptr("bwrap"), Mounts: []backends.Mount{{Source: work, Target: "w"}}})
	must(t, err)
	for _, depth := range []int{0, DefaultNestedProjectDepth} {
		s := e.Settings()
		s.NestedProjectDepth = depth
		_, err := e.SetSettings(s)
		must(t, err)
		p, err := e.planFor(sb, RunRequest{Argv: []string{"true"}})
		must(t, err)
		var spent time.Duration
		n := 0
		for range 20 {
			spec := &backends.Spec{}
			start := time.Now()
			release, _, err := e.protectAutorun(p, "bwrap", spec)
			must(t, err)
			release()
			spent += time.Since(start)
			n = len(spec.Protected)
		}
		t.Logf("nestedProjectDepth %d: protectAutorun (and its release) %v, %d paths kept read-only", depth, spent/20, n)
	}
	times := map[int][]time.Duration{}
	for i := range 41 {
		for _, depth := range []int{0, DefaultNestedProjectDepth} {
			s := e.Settings()
			s.NestedProjectDepth = depth
			_, err := e.SetSettings(s)
			must(t, err)
			start := time.Now()
			res, err := e.Exec(context.Background(), sb.ID, RunRequest{Argv: []string{"true"}})
			if err != nil || !res.Record.OK() {
				t.Fatal(err, res.Record)
			}
			if i > 0 {
				times[depth] = append(times[depth], time.Since(start))
			}
		}
	}
	for _, depth := range []int{0, DefaultNestedProjectDepth} {
		d := times[depth]
		slices.Sort(d)
		t.Logf("nestedProjectDepth %d: `true` median %v, p10 %v, p90 %v", depth, d[len(d)/2], d[len(d)/10], d[len(d)*9/10])
	}
}
