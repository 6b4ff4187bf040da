package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSubject(t *testing.T) {
	t.Parallel()
	names := map[string]bool{"app": true, "app/api": true, "api": true, "backends/docker": true, "docker": true, "go.mod": true, "go": true}
	long := "api: " + strings.Repeat("x", maxSubject-len("api: "))
	for _, tc := range []struct {
		name, subject, want string // want: a part of the complaint; "" for none
	}{
		{"package", "api: refuse a runtime dir another user owns", ""},
		{"package_path", "app/api: refuse a runtime dir another user owns", ""},
		{"two_packages", "api, docker: share the reply types", ""},
		{"fixed_name", "Makefile: add the fast tier", ""},
		{"root_file", "go.mod: update bbolt", ""},
		{"capital_after_prefix", "README: Say what the tray does", ""},
		{"exactly_72", long, ""},
		{"revert", `Revert "api: refuse a runtime dir another user owns"`, ""},
		{"unicode_counts_characters", "api: " + strings.Repeat("é", maxSubject-len("api: ")), ""},
		{"too_long", long + "x", "73 characters"},
		{"no_prefix", "refuse a runtime dir another user owns", `no "pkg: " prefix`},
		{"sentence_before_colon", "Fix the API: refuse a dir", `no "pkg: " prefix`},
		{"no_space_after_colon", "api:refuse a dir", `no "pkg: " prefix`},
		{"empty_prefix", ": refuse a dir", `no "pkg: " prefix`},
		{"unknown_prefix", "engine: refuse a dir", `prefix "engine" names no folder`},
		{"unknown_second_prefix", "api, nowhere: refuse a dir", `prefix "nowhere"`},
		{"wrong_case", "readme: say more", `prefix "readme"`},
		{"trailing_period", "api: refuse a runtime dir another user owns.", "trailing period"},
		{"empty_summary", "api: ", "nothing after the prefix"},
		{"spaces_in_summary", "api:  refuse a dir", "spaces around"},
		{"bad_revert", `Revert "refuse a dir"`, `no "pkg: " prefix`},
		{"fixup", "fixup! api: refuse a dir", `no "pkg: " prefix`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := checkSubject(tc.subject, names)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("%q: refused (%s), want it taken", tc.subject, got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("%q: got %q, want a complaint with %q", tc.subject, got, tc.want)
			}
		})
	}
}

// TestRunChecksTheCommitsSinceTheBase lints a real repository's history:
// only the commits after the base count, merges are skipped, a prefix
// may name a folder the commit removes, and the exit code says whether
// any subject broke the convention.
func TestRunChecksTheCommitsSinceTheBase(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not on PATH (CI=true)")
		}
		t.Skip("git is not on PATH")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	sh := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(subject string) {
		t.Helper()
		sh("add", "-A")
		sh("commit", "-q", "--allow-empty", "-m", subject, "-m", "Why.\n\nIssue: #1")
	}
	sh("init", "-q", "-b", "main")
	write("app/api/api.go")
	commit("Initial import, before the convention.")
	base := sh("rev-parse", "HEAD")
	write("app/old/old.go")
	commit("api: add a route")
	sh("rm", "-q", "-r", "app/old")
	commit("old: remove the old package")
	sh("checkout", "-q", "-b", "side")
	write("app/api/side.go")
	commit("app/api: add a side route")
	sh("checkout", "-q", "main")
	sh("merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side")

	lint := func(args ...string) (int, string) {
		var out, errs bytes.Buffer
		code := run(args, &out, &errs)
		return code, out.String() + errs.String()
	}
	if code, out := lint(base); code != 0 || !strings.Contains(out, "3 commits since") {
		t.Fatalf("a history that follows the convention: exit %d\n%s", code, out)
	}

	commit("engine: say it the old way.")
	code, out := lint(base)
	if code != 1 || !strings.Contains(out, `prefix "engine" names no folder`) || !strings.Contains(out, "1 of 4 commits") {
		t.Fatalf("a subject with a made-up prefix: exit %d\n%s", code, out)
	}
	if code, out := lint("HEAD~1"); code != 1 || !strings.Contains(out, "1 of 1 commits") {
		t.Fatalf("the base HEAD~1: exit %d\n%s", code, out)
	}
	if code, out := lint("no-such-ref"); code != 2 || !strings.Contains(out, `base "no-such-ref" is not a commit`) {
		t.Fatalf("an unknown base: exit %d\n%s", code, out)
	}
}

// TestAShallowCloneChecksWhatItHolds: a CI clone made with --depth stops
// short of the base; the commits it holds are all newer than the base,
// so each is checked, and a bad one still fails the run.
func TestAShallowCloneChecksWhatItHolds(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not on PATH (CI=true)")
		}
		t.Skip("git is not on PATH")
	}
	top := t.TempDir()
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	sh := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	origin := filepath.Join(top, "origin")
	if err := os.MkdirAll(filepath.Join(origin, "app", "api"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh(origin, "init", "-q", "-b", "main")
	for i, subject := range []string{"Before the convention, in a long sentence.", "api: first", "api: second"} {
		if err := os.WriteFile(filepath.Join(origin, "app", "api", "f.go"), []byte(subject), 0o644); err != nil {
			t.Fatal(err)
		}
		sh(origin, "add", "-A")
		sh(origin, "commit", "-q", "-m", subject)
		if i == 0 {
			sh(origin, "tag", "base")
		}
	}
	base := sh(origin, "rev-parse", "base")
	clone := filepath.Join(top, "clone")
	sh(top, "clone", "-q", "--depth", "2", "file://"+origin, clone)
	t.Chdir(clone)
	lint := func() (int, string) {
		var out, errs bytes.Buffer
		code := run([]string{base}, &out, &errs)
		return code, out.String() + errs.String()
	}
	if code, out := lint(); code != 0 || !strings.Contains(out, "does not reach") || !strings.Contains(out, "2 commits since") {
		t.Fatalf("a shallow clone of good commits: exit %d\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(clone, "app", "api", "f.go"), []byte("bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(clone, "commit", "-q", "-a", "-m", "Fixed it.")
	if code, out := lint(); code != 1 || !strings.Contains(out, "1 of 3 commits") {
		t.Fatalf("a shallow clone with a bad subject: exit %d\n%s", code, out)
	}
}
