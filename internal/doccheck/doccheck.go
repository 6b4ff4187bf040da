// Package doccheck reads the repository's Markdown for the tests that keep its docs true.
//
// A fenced code block of a page says what runs it on the line above its
// fence, so a reader (and a test) can tell:
//
//	<!-- run: TestDocsExamplesRun -->    a Go test runs it as written
//	<!-- run: make test-install -->      a make target runs it
//	<!-- run: .ci/run -->                a script of the repository runs it
//	<!-- not run: REASON -->             nothing does, and why
//
// The Go test that a block names collects it with [RunBy]; the tests of
// this package check that every block says one of these, that what it
// names exists, and that every link between pages finds its page and
// anchor.
package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Block is one fenced code block of a page.
type Block struct {
	// File is the page's path, relative to the repository's root.
	File string
	// Line is the fence's line number, from 1.
	Line int
	// Lang is the fence's info string ("sh", "json"; "" for none).
	Lang string
	// Run is the marker above the fence: "TestX", "make x", ".ci/run",
	// "not run: why", or "" when there is none.
	Run string
	// Text is the block's content, ending with a newline.
	Text string
}

// Where is the block's place, as an editor opens it.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// NotRun is the reason a "not run" marker gives, and whether it is one.
func (b Block) NotRun() (string, bool) { return strings.CutPrefix(b.Run, "not run: ") }

var marker = regexp.MustCompile(`^<!-- (run: .+|not run: .+) -->$`)

// Blocks returns the fenced code blocks of md, which is the page file.
func Blocks(file, md string) []Block {
	var blocks []Block
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		fence, lang, ok := openFence(lines[i])
		if !ok {
			continue
		}
		b := Block{File: file, Line: i + 1, Lang: lang}
		if i > 0 {
			if m := marker.FindStringSubmatch(lines[i-1]); m != nil {
				b.Run = strings.TrimPrefix(m[1], "run: ")
			}
		}
		var text strings.Builder
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != fence; i++ {
			text.WriteString(lines[i])
			text.WriteByte('\n')
		}
		b.Text = text.String()
		blocks = append(blocks, b)
	}
	return blocks
}

// openFence reports whether line opens a fenced block, with its fence
// (``` or ~~~, as long as it is) and info string.
func openFence(line string) (fence, lang string, ok bool) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return "", "", false
	}
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 {
			return s[:n], strings.TrimSpace(s[n:]), true
		}
	}
	return "", "", false
}

// Pages returns the repository's Markdown files under root, relative to
// it and sorted: README.md, SECURITY.md, docs/ and the rest, but nothing
// of node_modules, build output or hidden folders.
func Pages(root string) ([]string, error) {
	var pages []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "dist" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(pages)
	return pages, err
}

// RunBy returns the blocks of every page under root whose marker names
// runner (a test's name), in page order.
func RunBy(root, runner string) ([]Block, error) {
	pages, err := Pages(root)
	if err != nil {
		return nil, err
	}
	var blocks []Block
	for _, page := range pages {
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			return nil, err
		}
		for _, b := range Blocks(page, string(md)) {
			if b.Run == runner {
				blocks = append(blocks, b)
			}
		}
	}
	return blocks, nil
}

// Link is a link of a page to a place of the repository.
type Link struct {
	Line int
	// Path is the linked file, relative to the page's folder ("" for a
	// place on the page itself).
	Path string
	// Anchor is the heading's anchor, without the #, or "".
	Anchor string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^()<>\s]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	inlineCode = regexp.MustCompile("`+[^`]*`+")
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// Links returns the links of md to places of the repository, leaving out
// those in code and those to other sites (a URL with a scheme).
func Links(md string) []Link {
	var links []Link
	eachProse(md, func(n int, line string) {
		line = inlineCode.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, t := range targets {
			if scheme.MatchString(t) {
				continue
			}
			path, anchor, _ := strings.Cut(t, "#")
			links = append(links, Link{Line: n, Path: path, Anchor: anchor})
		}
	})
	return links
}

var (
	heading  = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlID   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	htmlTags = regexp.MustCompile(`<[^>]+>`)
	mdLink   = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// Anchors returns the anchors of md's headings as GitHub makes them
// (lower case, punctuation dropped, spaces as hyphens, a repeated one
// with -1, -2, ...), and those of <a id="..."> tags.
func Anchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	eachProse(md, func(_ int, line string) {
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	})
	return anchors
}

// Slug is the anchor GitHub gives a heading of this text.
func Slug(text string) string {
	text = htmlTags.ReplaceAllString(text, "")
	// A link in a heading keeps its text only.
	text = mdLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// eachProse calls fn with each line of md outside fenced code blocks and
// HTML comments, numbered from 1.
func eachProse(md string, fn func(n int, line string)) {
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if fence, _, ok := openFence(lines[i]); ok {
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != fence; i++ {
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "<!--") {
			for ; i < len(lines) && !strings.Contains(lines[i], "-->"); i++ {
			}
			continue
		}
		fn(i+1, lines[i])
	}
}
