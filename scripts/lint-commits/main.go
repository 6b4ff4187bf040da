// Command lint-commits checks commit subjects against CONTRIBUTING.md.
//
// Usage: go run ./scripts/lint-commits [BASE]
//
// Every commit of BASE..HEAD but merges must have a subject of the form
// "pkg: summary" in at most 72 characters, without a trailing period,
// where pkg names a folder of the tree (its whole path or its last parts:
// app/api or api), a file at the root (README, go.mod), or one of the
// names in fixedNames; several are separated by ", ". The names are taken
// from the commit's own tree and its parent's, so that a commit may name
// what it adds or what it removes. BASE defaults to the first commit of
// the convention (firstCommit): the history before it does not follow it.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"unicode/utf8"
)

// firstCommit is the commit from which subjects follow the convention;
// only the commits after it are checked unless a base is given. It is
// the last commit that landed before the convention was written down
// (CONTRIBUTING.md came with the commit after it).
const firstCommit = "fd48687"

// maxSubject is the longest subject, in characters: what `git log
// --oneline` and most tools show without cutting it.
const maxSubject = 72

// fixedNames may prefix a subject though no folder of that name exists:
// the repository's own files, CI and a change across the whole tree.
var fixedNames = []string{"README", "CONTRIBUTING", "SECURITY", "Makefile", "build", "frontend", "docs", "ci", "all"}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 1 || (len(args) == 1 && strings.HasPrefix(args[0], "-")) {
		fmt.Fprintln(stderr, "usage: lint-commits [BASE]   (default base: "+firstCommit+", the first commit of the convention)")
		return 2
	}
	base := firstCommit
	if len(args) == 1 && args[0] != "" {
		base = args[0]
	}
	span := base + "..HEAD"
	if _, err := git("rev-parse", "--verify", "--quiet", base+"^{commit}"); err != nil {
		shallow, _ := git("rev-parse", "--is-shallow-repository")
		if strings.TrimSpace(shallow) != "true" {
			fmt.Fprintf(stderr, "lint-commits: base %q is not a commit of this clone: give the commit your branch starts from (make lint-commits BASE=origin/main)\n", base)
			return 2
		}
		// A shallow clone that stops short of base holds only commits
		// made after it: every one of them is checked.
		fmt.Fprintf(stdout, "lint-commits: this shallow clone does not reach %s; checking every commit it holds\n", base)
		span = "HEAD"
	}
	out, err := git("log", "--no-merges", "--format=%h%x00%s%x00%T%x00%P", span)
	if err != nil {
		fmt.Fprintln(stderr, "lint-commits:", err)
		return 2
	}
	trees := map[string]map[string]bool{}
	namesOf := func(tree string) (map[string]bool, error) {
		if n, ok := trees[tree]; ok {
			return n, nil
		}
		n, err := treeNames(tree)
		trees[tree] = n
		return n, err
	}
	var checked, bad int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\x00")
		if len(f) != 4 {
			fmt.Fprintf(stderr, "lint-commits: cannot read git log's line %q\n", line)
			return 2
		}
		hash, subject, tree, parents := f[0], f[1], f[2], strings.Fields(f[3])
		names, err := namesOf(tree)
		if err == nil && len(parents) == 1 {
			var parentTree string
			if parentTree, err = git("rev-parse", parents[0]+"^{tree}"); err == nil {
				var more map[string]bool
				more, err = namesOf(strings.TrimSpace(parentTree))
				names = union(names, more)
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "lint-commits:", err)
			return 2
		}
		checked++
		if why := checkSubject(subject, names); why != "" {
			bad++
			fmt.Fprintf(stdout, "%s %q: %s\n", hash, subject, why)
		}
	}
	if bad > 0 {
		fmt.Fprintf(stdout, "%d of %d commits since %s break the subject convention (CONTRIBUTING.md): reword them (git rebase -i %s)\n", bad, checked, base, base)
		return 1
	}
	fmt.Fprintf(stdout, "%d commits since %s: every subject follows the convention\n", checked, base)
	return 0
}

// checkSubject says what is wrong with a subject, or "" when nothing is.
// names holds the prefixes the subject may use besides fixedNames.
func checkSubject(subject string, names map[string]bool) string {
	if inner, ok := strings.CutPrefix(subject, `Revert "`); ok && strings.HasSuffix(inner, `"`) {
		// git revert's own subject: the reverted one must have been right.
		return checkSubject(strings.TrimSuffix(inner, `"`), names)
	}
	if n := utf8.RuneCountInString(subject); n > maxSubject {
		return fmt.Sprintf("%d characters, more than %d: say less, and the rest in the body", n, maxSubject)
	}
	prefix, summary, ok := strings.Cut(subject, ": ")
	list := strings.Split(prefix, ", ")
	for _, name := range list {
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return `no "pkg: " prefix: start with the package or folder it changes, e.g. "api: refuse ..."`
		}
	}
	for _, name := range list {
		if !isName(name, names) {
			return fmt.Sprintf("prefix %q names no folder, package or root file of the tree (nor one of %s)", name, strings.Join(fixedNames, ", "))
		}
	}
	switch {
	case strings.TrimSpace(summary) == "":
		return "nothing after the prefix: say what the change does"
	case summary != strings.TrimSpace(summary):
		return "spaces around the summary"
	case strings.HasSuffix(summary, "."):
		return "a trailing period: a subject is a title"
	}
	return ""
}

func isName(name string, names map[string]bool) bool {
	for _, f := range fixedNames {
		if name == f {
			return true
		}
	}
	return names[name]
}

// treeNames lists the prefixes a tree offers: each folder by its path and
// by every tail of it (app/api, api; backends/docker/engineapi,
// docker/engineapi, engineapi), and each file at the root with and
// without its extension (README.md, README; go.mod, go).
func treeNames(tree string) (map[string]bool, error) {
	names := map[string]bool{}
	dirs, err := git("ls-tree", "-r", "-d", "--name-only", "-z", tree)
	if err != nil {
		return nil, err
	}
	for _, d := range strings.Split(dirs, "\x00") {
		if d == "" {
			continue
		}
		parts := strings.Split(d, "/")
		for i := range parts {
			names[strings.TrimPrefix(strings.Join(parts[i:], "/"), ".")] = true
		}
	}
	files, err := git("ls-tree", "--name-only", "-z", tree)
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Split(files, "\x00") {
		if f == "" {
			continue
		}
		names[f] = true
		names[strings.TrimSuffix(f, path.Ext(f))] = true
	}
	return names, nil
}

func union(a, b map[string]bool) map[string]bool {
	u := make(map[string]bool, len(a)+len(b))
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

func git(args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("git", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
