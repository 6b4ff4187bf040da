package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxSynopsis is the longest first sentence a package comment may have:
// it is what go doc, go list and pkg.go.dev show as the package's
// summary, one line saying what the package is for (tailscale's median
// is about 80 characters); the detail goes in the paragraphs after it.
const maxSynopsis = 120

// TestPackageCommentsStartShort fails when a package has no doc comment, or
// when its first sentence is longer than maxSynopsis.
func TestPackageCommentsStartShort(t *testing.T) {
	t.Parallel()
	files := goFiles(t)
	for _, p := range Packages(files) {
		s := p.Synopsis()
		switch {
		case p.Doc == "":
			t.Errorf("%s: the package has no doc comment (// Package NAME does what it is for.)", p.Dir)
		case len(s) > maxSynopsis:
			t.Errorf("%s: the package comment's first sentence is %d characters, more than %d: say what the package is for in one short sentence and move the detail into a paragraph after it:\n\t%s", p.Dir, len(s), maxSynopsis, s)
		}
	}
}

// issueRef matches a mention of one of this project's issues: the word
// issue and a number, or a number after a # (an item of one after a
// dot); TestIssueRefs has examples. From a clone they mean nothing; a
// comment names the rule instead. Another project's issue, named with
// its repository (owner/repo and the number), says where to look.
var issueRef = regexp.MustCompile(`(?i)\bissues?\s+#?\d+|(?:^|[^\w/.#&-])#\d+(?:\.\d+)?\b`)

// notIssues are numbered names that are no issue of ours.
var notIssues = regexp.MustCompile(`\bUTS #\d+`)

// TestCommentsCiteNoIssueNumbers fails on a Go comment, or a line of the
// top-level Markdown pages, that cites one of this project's issues by
// number.
func TestCommentsCiteNoIssueNumbers(t *testing.T) {
	t.Parallel()
	for _, f := range goFiles(t) {
		for _, g := range f.AST.Comments {
			for _, c := range g.List {
				for i, line := range strings.Split(c.Text, "\n") {
					if ref := issueIn(line); ref != "" {
						pos := f.Fset.Position(c.Pos())
						t.Errorf("%s:%d: the comment cites %q, which means nothing from a clone: name the rule instead", f.Path, pos.Line+i, ref)
					}
				}
			}
		}
	}
	root := root(t)
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		eachProse(string(md), func(n int, line string) {
			if ref := issueIn(line); ref != "" {
				t.Errorf("%s:%d: the page cites %q, which means nothing from a clone: name the rule instead", page, n, ref)
			}
		})
	}
}

// issueIn is the first issue of ours that line cites, or "".
func issueIn(line string) string {
	line = notIssues.ReplaceAllString(line, "")
	return strings.TrimLeft(issueRef.FindString(line), " \t(,;")
}

func TestIssueRefs(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{
		"// a crash (issue #15): the record":          "issue #15",
		"// the run (issue 7) traced":                 "issue 7",
		"// TestX (#14.11): an attached run":          "#14.11",
		"// #16, #11); apps autostart":                "#16",
		"// seen before (containers/bubblewrap#650).": "",
		"// (rtk-ai/rtk#981 and rtk-ai/rtk#893)":      "",
		"// UTS #46: case folding":                    "",
		"Issue: #N":                                   "",
		"&#34;":                                       "",
	} {
		if got := issueIn(line); got != want {
			t.Errorf("issueIn(%q) = %q, want %q", line, got, want)
		}
	}
}

func root(t *testing.T) string {
	t.Helper()
	r, err := Root()
	if err != nil {
		t.Fatalf("no go.mod above the test's folder: %v", err)
	}
	return r
}

func goFiles(t *testing.T) []GoFile {
	t.Helper()
	files, err := GoFiles(root(t))
	if err != nil {
		t.Fatal(err)
	}
	return files
}
