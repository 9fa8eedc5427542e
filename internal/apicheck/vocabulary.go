package apicheck

import (
	"bytes"
	"go/ast"
	"go/printer"
	"go/token"
	"path"
	"sort"
	"strings"
	"testing"
)

// Synonyms maps option names the repository does not use to the name it
// uses for the same concept (docs/vocabulary.md).
var Synonyms = map[string]string{
	"WithNamespace":        "WithPrefix",
	"WithKeyPrefix":        "WithPrefix",
	"WithOpTimeout":        "WithTimeout",
	"WithOperationTimeout": "WithTimeout",
	"WithCallTimeout":      "WithTimeout",
	"WithRedisTimeout":     "WithTimeout",
	"WithBatch":            "WithBatchSize",
	"WithRetryBackoff":     "WithBackoff",
	"WithErrHandler":       "WithErrorHandler",
	"WithOnError":          "WithErrorHandler",
	"WithErrorHook":        "WithErrorHandler",
	"WithLog":              "WithLogger",
	"WithSlog":             "WithLogger",
}

// Signatures are the parameter types of the options every package that has
// the concept spells alike (docs/vocabulary.md).
var Signatures = map[string]string{
	"WithPrefix":       "(string)",
	"WithTimeout":      "(time.Duration)",
	"WithLogger":       "(*slog.Logger)",
	"WithErrorHandler": "(func(error))",
	"WithBatchSize":    "(int)",
	"WithBackoff":      "(time.Duration, time.Duration)",
}

// skipForAPI names the directories whose packages are not public API.
var skipForAPI = map[string]bool{"internal": true, "cmd": true, "examples": true, "benchmarks": true}

// optionFunc is one exported option function of a package.
type optionFunc struct {
	pkg, name, params, at string
}

// Vocabulary fails t for every inconsistency among the exported options of
// the library packages below root, across all the modules there (nested
// modules included; internal, cmd, examples, benchmarks skipped): an option
// named by one of the Synonyms, an option whose parameter types differ from
// Signatures or from those of another package's option of the same name,
// and a package that declares options but exports no ErrInvalidOption. An
// option function is an exported function that returns a type of its
// package whose name ends in "Option". It returns the directories of the
// packages that declare options, relative to root and sorted.
func Vocabulary(t testing.TB, root string) []string {
	t.Helper()
	files := walk(t, root, func(dir string) bool { return skipForAPI[path.Base(dir)] })
	byPkg := map[string][]optionFunc{}
	sentinel := map[string]bool{}
	for _, f := range files {
		pkg := path.Dir(f.path)
		if declaresInvalidOption(f.ast) {
			sentinel[pkg] = true
		}
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || !returnsOption(fn) {
				continue
			}
			byPkg[pkg] = append(byPkg[pkg], optionFunc{pkg: pkg, name: fn.Name.Name,
				params: paramTypes(f.fset, fn.Type.Params), at: f.pos(fn.Pos())})
		}
	}
	pkgs := make([]string, 0, len(byPkg))
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	first := map[string]optionFunc{} // the first declaration of each name
	for _, p := range pkgs {
		if !sentinel[p] {
			t.Errorf("%s: package declares options (%s) but no ErrInvalidOption", p, byPkg[p][0].name)
		}
		for _, o := range byPkg[p] {
			if want, ok := Synonyms[o.name]; ok {
				t.Errorf("%s: %s: the repository calls this option %s", o.at, o.name, want)
			}
			if want, ok := Signatures[o.name]; ok && o.params != want {
				t.Errorf("%s: %s%s: every package's %s takes %s", o.at, o.name, o.params, o.name, want)
				continue
			}
			if prev, ok := first[o.name]; !ok {
				first[o.name] = o
			} else if prev.params != o.params && prev.pkg != o.pkg {
				t.Errorf("%s: %s%s, but %s declares %s%s", o.at, o.name, o.params, prev.at, o.name, prev.params)
			}
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("apicheck: no options below %s: is the walk broken?", root)
	}
	return pkgs
}

// returnsOption tells whether fn returns one value of a type of its own
// package whose name ends in "Option".
func returnsOption(fn *ast.FuncDecl) bool {
	if fn.Type.Results == nil || len(fn.Type.Results.List) != 1 || len(fn.Type.Results.List[0].Names) > 1 {
		return false
	}
	res, ok := fn.Type.Results.List[0].Type.(*ast.Ident)
	return ok && strings.HasSuffix(res.Name, "Option")
}

// paramTypes renders the parameter types of a function without their
// names, nor those of the parameters of function types among them:
// "(time.Duration, time.Duration)", "(func(error))".
func paramTypes(fset *token.FileSet, params *ast.FieldList) string {
	if params == nil {
		return "()"
	}
	var types []string
	for _, p := range params.List {
		s := typeString(fset, p.Type)
		for range max(len(p.Names), 1) {
			types = append(types, s)
		}
	}
	return "(" + strings.Join(types, ", ") + ")"
}

// typeString renders a type expression, dropping parameter names.
func typeString(fset *token.FileSet, e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return "*" + typeString(fset, x.X)
	case *ast.Ellipsis:
		return "..." + typeString(fset, x.Elt)
	case *ast.ArrayType:
		if x.Len == nil {
			return "[]" + typeString(fset, x.Elt)
		}
	case *ast.MapType:
		return "map[" + typeString(fset, x.Key) + "]" + typeString(fset, x.Value)
	case *ast.FuncType:
		s := "func" + paramTypes(fset, x.Params)
		switch r := paramTypes(fset, x.Results); {
		case r == "()":
		case x.Results.NumFields() == 1:
			s += " " + strings.Trim(r, "()")
		default:
			s += " " + r
		}
		return s
	}
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, e); err != nil {
		return "?"
	}
	return b.String()
}

// declaresInvalidOption tells whether f declares the package-level variable
// ErrInvalidOption.
func declaresInvalidOption(f *ast.File) bool {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if n.Name == "ErrInvalidOption" {
					return true
				}
			}
		}
	}
	return false
}
