package autorun

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/jailfs"
)

// layout makes files in a new folder: "d/" is a directory, "a -> b" a
// link, anything else a file with the text after "=" (or none).
func layout(t *testing.T, items ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, it := range items {
		if from, to, ok := strings.Cut(it, " -> "); ok {
			p := filepath.Join(root, from)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.Symlink(to, p))
			continue
		}
		if dir, ok := strings.CutSuffix(it, "/"); ok {
			must(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
			continue
		}
		name, text, _ := strings.Cut(it, "=")
		p := filepath.Join(root, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(strings.ReplaceAll(text, `\n`, "\n")), 0o644))
	}
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func find(t *testing.T, root string) ([]string, []string, error) {
	t.Helper()
	d, err := jailfs.OpenDir(root)
	must(t, err)
	defer d.Close()
	entries, elsewhere, err := Find(d, root)
	var out []string
	for _, e := range entries {
		s := e.Rel
		if e.Dir {
			s += "/"
		}
		if e.Missing {
			s += " (missing)"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out, elsewhere, err
}

// missingTop are the entries of a folder that holds none of the names.
var missingTop = []string{".claude/ (missing)", ".codex/ (missing)", ".cursor/ (missing)", ".gemini/ (missing)", ".git/ (missing)", ".idea/ (missing)", ".senclaw/ (missing)", ".vscode/ (missing)"}

func TestFind(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		items []string
		// want are entries besides missingTop's that are not replaced.
		want []string
		// gone are missingTop entries that want replaces.
		gone      []string
		elsewhere []string
	}{
		{name: "empty_folder", items: nil},
		{name: "agents_and_editors", items: []string{".claude/settings.json={}", ".vscode/", ".envrc=x", ".mcp.json={}"},
			want: []string{".claude/", ".envrc", ".mcp.json", ".vscode/"}, gone: []string{".claude/ (missing)", ".vscode/ (missing)"}},
		{name: "repository", items: []string{".git/config=[core]\n", ".git/hooks/pre-commit=#!/bin/sh"},
			want: []string{".git/config", ".git/hooks/"}, gone: []string{".git/ (missing)"}},
		{name: "repository_without_hooks", items: []string{".git/config=x=1"},
			want: []string{".git/config", ".git/hooks/ (missing)"}, gone: []string{".git/ (missing)"}},
		{name: "hooks_path_and_husky", items: []string{".git/config=[core]\n\thooksPath = .husky/_\n", ".git/hooks/", ".husky/_/h=x"},
			want: []string{".git/config", ".git/hooks/", ".husky/", ".husky/_/"}, gone: []string{".git/ (missing)"}},
		{name: "hooks_path_missing", items: []string{".git/config=[core]\nhookspath=\"githooks\" # ours\n"},
			want: []string{".git/config", ".git/hooks/ (missing)", "githooks/ (missing)"}, gone: []string{".git/ (missing)"}},
		{name: "linked_hook_and_programs", items: []string{
			".git/config=[core]\n fsmonitor = ./tools/watch --x\n[filter \"x\"]\n clean = scripts/clean.sh\n[alias]\n t = !bin/t\n[diff \"y\"]\n textconv = cat\n[include]\n path = ../extra.gitconfig\n",
			".git/hooks/pre-commit -> ../../scripts/pre-commit", "scripts/pre-commit=x", "scripts/clean.sh=x", "tools/watch=x", "bin/t=x", "extra.gitconfig=[user]\n"},
			want: []string{".git/config", ".git/hooks/", "bin/t", "extra.gitconfig", "scripts/clean.sh", "scripts/pre-commit", "tools/watch"}, gone: []string{".git/ (missing)"}},
		{name: "worktree_pointer", items: []string{".git=gitdir: /elsewhere/.git/worktrees/x\n"},
			want: []string{".git"}, gone: []string{".git/ (missing)"}, elsewhere: []string{"/elsewhere/.git/worktrees/x"}},
		{name: "submodules", items: []string{".git/config=", ".git/hooks/", ".git/modules/a/config=", ".git/modules/a/hooks/", ".git/modules/b/modules/c/config=", "sub/.git=gitdir: ../.git/modules/a"},
			want: []string{".git/config", ".git/hooks/", ".git/modules/a/config", ".git/modules/a/hooks/", ".git/modules/b/modules/c/config", ".git/modules/b/modules/c/hooks/ (missing)"}, gone: []string{".git/ (missing)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := layout(t, tc.items...)
			got, elsewhere, err := find(t, root)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, m := range missingTop {
				if !slices.Contains(tc.gone, m) {
					want = append(want, m)
				}
			}
			want = append(want, tc.want...)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("entries:\n got %q\nwant %q", got, want)
			}
			if !slices.Equal(elsewhere, tc.elsewhere) {
				t.Errorf("elsewhere: got %q, want %q", elsewhere, tc.elsewhere)
			}
		})
	}
}

// TestFindRefuses: what cannot be kept read-only refuses the run.
func TestFindRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		items []string
		rel   string
	}{
		{"linked_agent_settings", []string{"decoy/", ".claude -> decoy"}, ".claude"},
		{"linked_git", []string{"decoy/", ".git -> decoy"}, ".git"},
		{"linked_hooks_dir", []string{".git/config=", "h/", ".git/hooks -> ../h"}, ".git/hooks"},
		{"linked_envrc", []string{"e=x", ".envrc -> e"}, ".envrc"},
		{"planted_commondir", []string{".git/config=", ".git/hooks/", ".git/commondir=../evil"}, ".git/commondir"},
		{"hook_linked_to_nothing", []string{".git/config=", ".git/hooks/pre-push -> ../../scripts/missing"}, ".git/hooks/pre-push"},
		{"fsmonitor_to_nothing", []string{".git/config=[core]\nfsmonitor=./watch\n", ".git/hooks/"}, ".git/config (core.fsmonitor)"},
		{"hooks_path_through_a_link", []string{".git/config=[core]\nhooksPath=l/hooks\n", ".git/hooks/", "real/hooks/", "l -> real"}, "l/hooks"},
		{"config_is_a_fifo", []string{".git/hooks/"}, ".git/config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := layout(t, tc.items...)
			if tc.name == "config_is_a_fifo" {
				must(t, os.MkdirAll(filepath.Join(root, ".git"), 0o755))
				must(t, mkfifo(filepath.Join(root, ".git", "config")))
			}
			_, _, err := find(t, root)
			var re *RefusedError
			if !errors.As(err, &re) || re.Rel != tc.rel {
				t.Fatalf("got %v, want a refusal of %s", err, tc.rel)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	t.Parallel()
	entries := []Entry{{Rel: ".git/config"}, {Rel: ".git/hooks", Dir: true}, {Rel: "tools/watch"}}
	for rel, want := range map[string]bool{
		".claude": true, ".claude/settings.local.json": true, ".Claude/settings.json": true,
		".vscode/tasks.json": true, ".envrc": true, ".git/config": true, ".git/hooks/pre-commit": true,
		"tools/watch": true, ".git": true, ".gitignore": false, "src/main.go": false, ".claudex": false,
		"tools/watcher": false, ".git/HEAD": true,
	} {
		if got := Covers(entries, rel); got != want {
			t.Errorf("Covers(%q) = %v, want %v", rel, got, want)
		}
	}
}

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d, err := jailfs.OpenDir(root)
	must(t, err)
	defer d.Close()
	var p Placeholders
	must(t, p.Hold(d, root, ".claude"))
	must(t, p.Hold(d, root, ".claude")) // a second run
	fi, err := os.Lstat(filepath.Join(root, ".claude"))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != PlaceholderMode {
		t.Fatalf("placeholder: %v %v", fi, err)
	}
	p.Release(d, root, ".claude")
	if _, err := os.Lstat(filepath.Join(root, ".claude")); err != nil {
		t.Fatalf("the first release removed what the second run holds: %v", err)
	}
	p.Release(d, root, ".claude")
	if _, err := os.Lstat(filepath.Join(root, ".claude")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the last release left the placeholder: %v", err)
	}
	// A host program that makes the directory its own meanwhile keeps it.
	must(t, p.Hold(d, root, ".vscode"))
	must(t, os.Chmod(filepath.Join(root, ".vscode"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, ".vscode", "settings.json"), nil, 0o644))
	p.Release(d, root, ".vscode")
	if _, err := os.Stat(filepath.Join(root, ".vscode", "settings.json")); err != nil {
		t.Fatalf("a release removed a host program's directory: %v", err)
	}
	// Leftovers of an engine that stopped go at the next start.
	must(t, os.Mkdir(filepath.Join(root, ".gemini"), PlaceholderMode))
	must(t, os.Mkdir(filepath.Join(root, ".idea"), 0o755))
	Sweep(d)
	if _, err := os.Lstat(filepath.Join(root, ".gemini")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Sweep left a placeholder: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, ".idea")); err != nil {
		t.Errorf("Sweep removed a person's directory: %v", err)
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	got := parseConfig("# c\n[Core]\n\tHooksPath = \"a b\" ; x\n[filter \"LFS\"]\nclean = git-lfs clean -- %f\n[alias] t = !x\\\n/y\n[core.x]\nk\n")
	want := []configValue{{"core.hookspath", "a b"}, {"filter.LFS.clean", "git-lfs clean -- %f"}, {"alias.t", "!x/y"}, {"core.x.k", ""}}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for v, want := range map[string]string{"./x --y": "./x", "!bin/t a": "bin/t", "git-lfs": "", "~/bin/x": "", "$HOME/x": "", `"./q" r`: "./q"} {
		if got := programPath(v); got != want {
			t.Errorf("programPath(%q) = %q, want %q", v, got, want)
		}
	}
}
