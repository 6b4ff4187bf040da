package doccheck

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Root is the repository's root: the nearest folder above the current
// one (or it) that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// GoFile is one parsed .go file of the repository.
type GoFile struct {
	// Path is relative to the repository's root.
	Path string
	Fset *token.FileSet
	AST  *ast.File
}

// Test reports whether the file is a test file.
func (f GoFile) Test() bool { return strings.HasSuffix(f.Path, "_test.go") }

// GoFiles parses every .go file under root with its comments, as the go
// tool finds them: not under testdata, vendor, node_modules, or a folder
// whose name starts with "." or "_".
func GoFiles(root string) ([]GoFile, error) {
	var files []GoFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, GoFile{Path: filepath.ToSlash(rel), Fset: fset, AST: f})
		return nil
	})
	return files, err
}

// Package is a package's folder and its doc comment, as go doc reads it.
type Package struct {
	// Dir is the package's folder, relative to the repository's root.
	Dir string
	// Doc is the text of its package comments, in file order.
	Doc string
	// DocFiles are the files that carry a package comment.
	DocFiles []string
}

// Synopsis is the doc comment's first sentence, as go doc and go list's
// .Doc show it.
func (p Package) Synopsis() string { return new(doc.Package).Synopsis(p.Doc) }

// Packages groups files' non-test, buildable files by folder.
func Packages(files []GoFile) []Package {
	byDir := map[string]*Package{}
	for _, f := range files {
		if f.Test() || ignored(f.AST) {
			continue
		}
		dir := filepath.ToSlash(filepath.Dir(f.Path))
		p := byDir[dir]
		if p == nil {
			p = &Package{Dir: dir}
			byDir[dir] = p
		}
		if f.AST.Doc != nil {
			text := f.AST.Doc.Text()
			if p.Doc != "" {
				p.Doc += "\n"
			}
			p.Doc += text
			p.DocFiles = append(p.DocFiles, f.Path)
		}
	}
	var pkgs []Package
	for _, p := range byDir {
		pkgs = append(pkgs, *p)
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Dir < pkgs[j].Dir })
	return pkgs
}

// ignored reports whether f is built by nothing (//go:build ignore).
func ignored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:build ") && strings.Contains(c.Text, "ignore") {
				return true
			}
		}
	}
	return false
}
