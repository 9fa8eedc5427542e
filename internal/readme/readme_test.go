package readme

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

// skipDirs hold no library packages: their options (if any) are not public API.
var skipDirs = map[string]bool{"internal": true, "examples": true, "cmd": true, "benchmarks": true, ".git": true, ".ci": true}

type option struct {
	name    string
	generic bool
	params  []string // parameter names; a variadic one ends in "..."
	file    string
	doc     string
	typed   bool // returns one of the package's option types
}

// packageOptions parses the non-test Go files of every library package
// directory (nested modules included) and returns, by directory, its option
// functions: the exported functions named With... and those that return one
// of the package's option types (a type whose name ends in "Option").
func packageOptions(t *testing.T) map[string][]option {
	t.Helper()
	out := map[string][]option{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() {
				continue
			}
			if !strings.HasPrefix(fn.Name.Name, "With") && !returnsOption(fn) {
				continue
			}
			o := option{name: fn.Name.Name, generic: fn.Type.TypeParams != nil, file: path, doc: fn.Doc.Text(), typed: returnsOption(fn)}
			for _, p := range fn.Type.Params.List {
				dots := ""
				if _, ok := p.Type.(*ast.Ellipsis); ok {
					dots = "..."
				}
				for _, n := range p.Names {
					o.params = append(o.params, n.Name+dots)
				}
				if len(p.Names) == 0 {
					o.params = append(o.params, "_"+dots)
				}
			}
			out[dir] = append(out[dir], o)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// returnsOption reports whether fn returns one value of a type of its own
// package whose name ends in "Option".
func returnsOption(fn *ast.FuncDecl) bool {
	if fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
		return false
	}
	res, ok := fn.Type.Results.List[0].Type.(*ast.Ident)
	return ok && strings.HasSuffix(res.Name, "Option")
}

func sortedDirs(pkgs map[string][]option) []string {
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs
}

// Options are documented in godoc, once: every option function has a doc
// comment that begins with its name and says more than that.
func TestOptionsHaveDocComments(t *testing.T) {
	pkgs := packageOptions(t)
	if len(pkgs["cache"]) == 0 {
		t.Fatal("found no options in package cache: is the walk broken?")
	}
	for _, dir := range sortedDirs(pkgs) {
		for _, o := range pkgs[dir] {
			words := strings.Fields(o.doc)
			switch {
			case len(words) == 0:
				t.Errorf("%s: option %s (%s) has no doc comment", dir, o.name, o.file)
			case words[0] != o.name:
				t.Errorf("%s: the doc comment of %s (%s) does not begin with its name", dir, o.name, o.file)
			case len(words) < 4:
				t.Errorf("%s: the doc comment of %s (%s) says too little: %q", dir, o.name, o.file, o.doc)
			}
		}
	}
}

// row entries: `Name(a, b)` or `Name[V](a)` inside backticks of a table row.
var (
	codeSpan = regexp.MustCompile("`([^`]*)`")
	call     = regexp.MustCompile(`\b([A-Z]\w*)(\[[^\]]*\])?\(([^()]*)\)`)
)

type documented struct {
	generic bool
	params  []string
}

// tableCalls returns the calls written in the Markdown table rows of a file.
func tableCalls(text string) map[string][]documented {
	out := map[string][]documented{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		for _, span := range codeSpan.FindAllStringSubmatch(line, -1) {
			for _, m := range call.FindAllStringSubmatch(span[1], -1) {
				var params []string
				if strings.TrimSpace(m[3]) != "" {
					for _, p := range strings.Split(m[3], ",") {
						params = append(params, strings.TrimSpace(p))
					}
				}
				out[m[1]] = append(out[m[1]], documented{generic: m[2] != "", params: params})
			}
		}
	}
	return out
}

// A package README.md that lists options in a table lists them all, with
// the parameter names of their declarations, and no option the package
// does not declare. (The repository's README lists none: cache's options
// are in its godoc.)
func TestPackageREADMETablesMatchTheCode(t *testing.T) {
	pkgs := packageOptions(t)
	for _, dir := range sortedDirs(pkgs) {
		path := filepath.Join(root, dir, "README.md")
		text, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Run(dir, func(t *testing.T) {
			docs := tableCalls(string(text))
			declared := map[string]bool{}
			for _, o := range pkgs[dir] {
				declared[o.name] = true
				if !o.typed {
					continue
				}
				ds, ok := docs[o.name]
				if !ok {
					t.Errorf("%s: option %s (%s) has no row in a table of %s", dir, o.name, o.file, path)
					continue
				}
				for _, d := range ds {
					if !slices.Equal(d.params, o.params) || d.generic != o.generic {
						t.Errorf("%s: %s shows %s(%s) (generic %v); the code has %s(%s) (generic %v)",
							dir, path, o.name, strings.Join(d.params, ", "), d.generic, o.name, strings.Join(o.params, ", "), o.generic)
					}
				}
			}
			for name := range docs {
				if strings.HasPrefix(name, "With") && !declared[name] {
					t.Errorf("%s: %s has a row for %s, which package %s does not declare", dir, path, name, dir)
				}
			}
		})
	}
}
