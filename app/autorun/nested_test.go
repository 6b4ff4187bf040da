package autorun

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/senclaw/sandbox/app/jailfs"
)

// Nested finds the folders with agents' or git's files below a folder,
// level by level down to the depth, and not inside what package managers
// install, git's own folder, the agents' folders or links; past the
// limit it refuses, saying so.
func TestNested(t *testing.T) {
	t.Parallel()
	root := layout(t,
		".git/", "top.txt", // the folder itself is Find's
		"work/proj/.git/HEAD", "work/proj/src/", "work/ide/.vscode/",
		"work/env/.envrc", "work/mcp/.mcp.json", "work/sub/.gitmodules",
		"work/wt/.git=gitdir: ../proj/.git/worktrees/wt",
		"a/b/c/d/.claude/", "a/b/c/d/e/.git/", // levels 4 and 5
		"node_modules/pkg/.git/", ".venv/lib/.git/", "__pycache__/x/.git/",
		"work/proj/.git/modules/m/.git/", ".claude/inner/.git/",
		"linked -> work", "work/dots/.claude -> /etc",
		"plain/docs/readme",
	)
	d, err := jailfs.OpenDir(root)
	must(t, err)
	defer d.Close()
	got, listed, err := Nested(d, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"work/dots", "work/env", "work/ide", "work/mcp", "work/proj", "work/sub", "work/wt", "a/b/c/d"}
	if !slices.Equal(got, want) {
		t.Errorf("Nested = %v, want %v", got, want)
	}
	if listed == 0 || listed > 20 {
		t.Errorf("listed %d folders", listed)
	}
	if got, _, _ := Nested(d, 0, 64); len(got) != 0 {
		t.Errorf("depth 0: %v", got)
	}
	if got, _, _ := Nested(d, 5, 64); !slices.Contains(got, "a/b/c/d/e") {
		t.Errorf("depth 5: %v", got)
	}
	got, _, err = Nested(d, 4, 3)
	var re *RefusedError
	if !errors.As(err, &re) || !re.Bound || re.Rel != "work/mcp" || !strings.Contains(re.Reason, "nestedProjectLimit (3)") || len(got) != 3 {
		t.Errorf("past the limit: %v %v", got, err)
	}
	// What each project holds, relative to the folder; a link at one of
	// the names refuses as it does at the top.
	entries, _, err := FindNested(d, root, []string{"work/proj", "work/ide"})
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"work/proj/.git/hooks", "work/proj/.claude", "work/ide/.vscode", "work/ide/.git"} {
		if !slices.ContainsFunc(entries, func(e Entry) bool { return e.Rel == rel }) {
			t.Errorf("FindNested lacks %s: %v", rel, entries)
		}
	}
	if _, _, err := FindNested(d, root, []string{"work/dots"}); !errors.As(err, &re) || re.Rel != "work/dots/.claude" {
		t.Errorf("a link in a nested project: %v", err)
	}
	if !Covers(nil, "work/env/.envrc", "work/env") || !Covers(nil, "work/ide/.Claude/x", "work/ide") || Covers(nil, "work/ide/src/x", "work/ide") {
		t.Error("Covers does not cover the nested projects' names")
	}
}

// The walk lists a bounded number of folders and entries, and refuses
// past them rather than protect some of the projects (not parallel: it
// lowers the bounds).
func TestNestedWalkIsBounded(t *testing.T) {
	root := layout(t, "a/x/", "b/x/", "c/x/", "many/1", "many/2", "many/3", "many/4")
	d, err := jailfs.OpenDir(root)
	must(t, err)
	defer d.Close()
	defer func(w, e int) { maxWalked, maxEntries = w, e }(maxWalked, maxEntries)
	maxWalked = 3
	var re *RefusedError
	if _, listed, err := Nested(d, 4, 64); !errors.As(err, &re) || !re.Bound || !strings.Contains(re.Reason, "3 folders") || listed != 3 {
		t.Errorf("past maxWalked: %d %v", listed, err)
	}
	maxWalked, maxEntries = 100, 6
	if _, _, err := Nested(d, 4, 64); !errors.As(err, &re) || !re.Bound {
		t.Errorf("past maxEntries: %v", err)
	}
}
