package readme

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxPackageComment is the most lines a library package's comment may take:
// a map a reader takes in at a screen or two (what the package is for, a
// short example, what every user must know, where to read on); the proofs,
// layouts and internals go to docs/.
const maxPackageComment = 80

// Every library package's comment is a map, under maxPackageComment lines.
func TestPackageCommentsAreMaps(t *testing.T) {
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		pkgs, err := parser.ParseDir(token.NewFileSet(), path, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		for _, p := range pkgs {
			for name, f := range p.Files {
				if f.Doc == nil {
					continue
				}
				n++
				if lines := strings.Count(f.Doc.Text(), "\n"); lines > maxPackageComment {
					t.Errorf("%s: the package comment takes %d lines, more than %d: keep the map, move the rest to docs/", name, lines, maxPackageComment)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no package comment found")
	}
}
