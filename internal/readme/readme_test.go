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
}

// packageOptions parses the non-test Go files of every package directory
// (nested modules included) and returns, by directory, the option functions
// each declares.
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
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
				continue
			}
			res, ok := fn.Type.Results.List[0].Type.(*ast.Ident) // a type of this package
			if !ok || !strings.HasSuffix(res.Name, "Option") {
				continue
			}
			o := option{name: fn.Name.Name, generic: fn.Type.TypeParams != nil, file: path}
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

func readmeOf(dir string) string {
	if dir == "cache" {
		return filepath.Join(root, "README.md")
	}
	return filepath.Join(root, dir, "README.md")
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

func TestREADMEOptionTablesMatchTheCode(t *testing.T) {
	pkgs := packageOptions(t)
	if len(pkgs["cache"]) == 0 {
		t.Fatal("found no options in package cache: is the walk broken?")
	}
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			path := readmeOf(dir)
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("package %s has options but no README table: %v", dir, err)
			}
			docs := tableCalls(string(text))
			declared := map[string]bool{}
			for _, o := range pkgs[dir] {
				declared[o.name] = true
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
