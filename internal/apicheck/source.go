package apicheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// file is one parsed non-test Go file.
type file struct {
	path string // slash-separated, relative to the walk's root
	fset *token.FileSet
	ast  *ast.File
}

func (f file) pos(p token.Pos) string {
	return f.path + ":" + strconv.Itoa(f.fset.Position(p).Line)
}

// parse returns the non-test Go files below root, skipping testdata, vendor
// and hidden directories and every directory below root that holds a module
// of its own.
func parse(t testing.TB, root string) []file {
	t.Helper()
	return walk(t, root, func(path string) bool {
		_, err := os.Stat(filepath.Join(path, "go.mod"))
		return err == nil
	})
}

// walk returns the non-test Go files below root, skipping testdata, vendor
// and hidden directories and every directory below root for which skip
// says so.
func walk(t testing.TB, root string, skip func(dir string) bool) []file {
	t.Helper()
	var files []file
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			if path != root && skip(path) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, file{path: filepath.ToSlash(rel), fset: fset, ast: f})
		return nil
	})
	if err != nil {
		t.Fatalf("apicheck: reading %s: %v", root, err)
	}
	if len(files) == 0 {
		t.Fatalf("apicheck: no Go files below %s", root)
	}
	return files
}
