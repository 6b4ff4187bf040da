package doccheck

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsLinksResolve fails when a page links to a file that is not
// there, or to an anchor its page does not have.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	root := root(t)
	pages := pages(t, root)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		anchors[page] = Anchors(string(md))
		return anchors[page]
	}
	for _, page := range pages {
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range Links(string(md)) {
			target := page
			if l.Path != "" {
				target = path.Clean(path.Join(path.Dir(page), l.Path))
				if target == ".." || strings.HasPrefix(target, "../") {
					t.Errorf("%s:%d: %q leaves the repository", page, l.Line, l.Path)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					t.Errorf("%s:%d: the link to %q finds no file (%s)", page, l.Line, l.Path, target)
					continue
				}
			}
			if l.Anchor != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[l.Anchor] {
				t.Errorf("%s:%d: %s has no heading with the anchor #%s", page, l.Line, target, l.Anchor)
			}
		}
	}
}

// TestDocsPagesAreLinkedFromTheREADME fails when a page of docs/ is not
// linked from README.md, the front door, and so found by nobody.
func TestDocsPagesAreLinkedFromTheREADME(t *testing.T) {
	t.Parallel()
	root := root(t)
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range Links(string(md)) {
		linked[path.Clean(l.Path)] = true
	}
	for _, page := range pages(t, root) {
		if strings.HasPrefix(page, "docs/") && !linked[page] {
			t.Errorf("README.md does not link %s", page)
		}
	}
}

// documented are the pages whose examples must say what runs them.
func documented(page string) bool {
	return page == "README.md" || strings.HasPrefix(page, "docs/")
}

var (
	makeTarget = regexp.MustCompile(`^make ([a-z][a-z0-9-]*)$`)
	testName   = regexp.MustCompile(`^Test[A-Z]\w*$`)
)

// TestDocsBlocksSayWhatRunsThem fails when an example of the README or
// docs/ (a sh or json block) does not say, on the line above its fence,
// what runs it, or names a test, make target or script that does not
// exist. A Go test that it names must collect its blocks with RunBy.
func TestDocsBlocksSayWhatRunsThem(t *testing.T) {
	t.Parallel()
	root := root(t)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	tests := testFuncs(t)
	for _, page := range pages(t, root) {
		if !documented(page) {
			continue
		}
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range Blocks(page, string(md)) {
			if b.Lang == "json" && !json.Valid([]byte(b.Text)) {
				t.Errorf("%s: the json block is not JSON", b.Where())
			}
			if b.Lang != "sh" && b.Lang != "json" {
				continue
			}
			if _, ok := b.NotRun(); ok {
				continue
			}
			switch by := b.Run; {
			case by == "":
				t.Errorf("%s: the %s block does not say what runs it: put <!-- run: TestX -->, <!-- run: make target --> or <!-- not run: why --> on the line above its fence", b.Where(), b.Lang)
			case testName.MatchString(by):
				file, ok := tests[by]
				if !ok {
					t.Errorf("%s: no test %s runs the block", b.Where(), by)
					continue
				}
				src, err := os.ReadFile(filepath.Join(root, file))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(src), "RunBy(") && !strings.Contains(string(src), "docBlocks(") {
					t.Errorf("%s: %s (%s) does not collect the blocks marked with its name", b.Where(), by, file)
				}
			case makeTarget.MatchString(by):
				target := makeTarget.FindStringSubmatch(by)[1]
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
					t.Errorf("%s: the Makefile has no target %s", b.Where(), target)
				}
			default:
				if _, err := os.Stat(filepath.Join(root, by)); err != nil {
					t.Errorf("%s: %q, which should run the block, is no test, make target or file of the repository", b.Where(), by)
				}
			}
		}
	}
}

// testFuncs maps each Test function of the repository to its file.
func testFuncs(t *testing.T) map[string]string {
	t.Helper()
	funcs := map[string]string{}
	for _, f := range goFiles(t) {
		if !f.Test() {
			continue
		}
		for name := range f.AST.Scope.Objects {
			if strings.HasPrefix(name, "Test") {
				funcs[name] = f.Path
			}
		}
	}
	return funcs
}

func pages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	return pages
}
