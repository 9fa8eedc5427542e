package apicheck

import (
	"go/ast"
	"go/token"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Shared maps the errors every package names alike, one per concept, to the
// internal/kind function that must make each: so that every package's
// error of a concept matches every other's (docs/vocabulary.md, "Errors").
var Shared = map[string]string{
	"ErrRedis":           "Redis",
	"ErrInvalidArgument": "InvalidArgument",
	"ErrInvalidOption":   "InvalidOption",
	"ErrClosed":          "Closed",
}

// ErrorSynonyms maps error names the repository does not use to the shared
// error that stands for their concept. Any other ErrInvalid... is refused
// too: the error's text says what was invalid.
var ErrorSynonyms = map[string]string{
	"ErrTimeout":     "ErrRedis",
	"ErrStore":       "ErrRedis",
	"ErrFleet":       "ErrRedis",
	"ErrUnavailable": "ErrRedis",
	"ErrNilLoader":   "ErrInvalidArgument",
	"ErrShutdown":    "ErrClosed",
}

// CloseTakesContext names the types whose Close differs from the contract
// (docs/vocabulary.md, "Close"), and says so: Close(ctx) error.
var CloseTakesContext = map[string]bool{"stock.Consumer": true}

// otherInvalid matches the name of an exported error of one bad input.
var otherInvalid = regexp.MustCompile(`^ErrInvalid[A-Z]`)

// redisImport is the import path of the client every package's Redis calls
// go through.
const redisImport = "github.com/redis/go-redis/v9"

// Contract fails t for every break of the shared contracts among the
// library packages below root (every module; cmd, examples and benchmarks
// skipped; internal packages read for what their public package exports):
//
//   - a variable named in Shared made otherwise than by its internal/kind
//     function given the name of the public package it belongs to, or than
//     as an alias of a variable of the same name;
//   - an exported error named in ErrorSynonyms or ErrInvalid<Other>;
//   - a public package that imports go-redis but exports no ErrRedis;
//   - a package with WithLogger but no WithErrorHandler, or the reverse;
//   - a Close method of an exported type that is not Close() error (or
//     Close(context.Context) error for the types of CloseTakesContext).
//
// It returns the public packages that export ErrRedis, sorted.
func Contract(t testing.TB, root string) []string {
	t.Helper()
	files := walk(t, root, func(dir string) bool {
		b := path.Base(dir)
		return b == "cmd" || b == "examples" || b == "benchmarks"
	})
	usesRedis, exports, options := map[string]bool{}, map[string]map[string]bool{}, map[string]map[string]bool{}
	for _, f := range files {
		dir := path.Dir(f.path)
		owner, internal := ownerOf(dir)
		if f.ast.Name.Name == "main" {
			continue
		}
		for _, imp := range f.ast.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == redisImport && !internal {
				usesRedis[dir] = true
			}
		}
		for name, v := range packageVars(f.ast) {
			if k, ok := Shared[name]; ok {
				if !madeBy(v, k, path.Base(owner)) && !isAlias(v, name) {
					t.Errorf("%s: %s must be kind.%s(%q) (internal/kind) or an alias of one", f.pos(v.Pos()), name, k, path.Base(owner))
				}
				if !internal {
					set(exports, dir, name)
				}
				continue
			}
			if internal || !ast.IsExported(name) || !strings.HasPrefix(name, "Err") {
				continue
			}
			if want, ok := ErrorSynonyms[name]; ok {
				t.Errorf("%s: %s: the repository calls this error %s", f.pos(v.Pos()), name, want)
			} else if otherInvalid.MatchString(name) && name != "ErrInvalidArgument" && name != "ErrInvalidOption" {
				t.Errorf("%s: %s: a bad argument is ErrInvalidArgument (its text says which), a bad option ErrInvalidOption", f.pos(v.Pos()), name)
			}
		}
		if internal {
			continue
		}
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			switch {
			case !ok:
			case fn.Recv == nil && returnsOption(fn):
				set(options, dir, fn.Name.Name)
			case fn.Recv != nil && fn.Name.Name == "Close":
				checkClose(t, f, fn)
			}
		}
	}
	var withRedis []string
	for dir := range usesRedis {
		if !exports[dir]["ErrRedis"] {
			t.Errorf("%s: the package calls Redis but exports no ErrRedis", dir)
		}
	}
	for dir, names := range exports {
		if names["ErrRedis"] {
			withRedis = append(withRedis, dir)
		}
	}
	for dir, opts := range options {
		if opts["WithLogger"] != opts["WithErrorHandler"] {
			t.Errorf("%s: a package that reports what no caller sees has both WithLogger and WithErrorHandler (it has one)", dir)
		}
	}
	sort.Strings(withRedis)
	return withRedis
}

// checkClose fails t unless fn, a Close method, is Close() error, or
// Close(context.Context) error on a type of CloseTakesContext.
func checkClose(t testing.TB, f file, fn *ast.FuncDecl) {
	recv := typeString(f.fset, fn.Recv.List[0].Type)
	recv = strings.TrimPrefix(recv, "*")
	if !ast.IsExported(recv) {
		return
	}
	sig := paramTypes(f.fset, fn.Type.Params) + " " + paramTypes(f.fset, fn.Type.Results)
	want := "() (error)"
	if CloseTakesContext[f.ast.Name.Name+"."+recv] {
		want = "(context.Context) (error)"
	}
	if sig != want {
		t.Errorf("%s: %s.Close%s: every Close is Close%s (docs/vocabulary.md, \"Close\")", f.pos(fn.Pos()), recv, sig, want)
	}
}

// ownerOf returns the public package a directory's code belongs to (the
// directory itself, or the one above its internal/), and whether it is
// internal.
func ownerOf(dir string) (string, bool) {
	if i := strings.Index(dir+"/", "/internal/"); i >= 0 {
		return dir[:i], true
	}
	if dir == "internal" || strings.HasPrefix(dir, "internal/") {
		return "", true
	}
	return dir, false
}

// packageVars maps the package-level variables of f that have a value to
// that value.
func packageVars(f *ast.File) map[string]ast.Expr {
	out := map[string]ast.Expr{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if i < len(v.Values) {
					out[n.Name] = v.Values[i]
				}
			}
		}
	}
	return out
}

// madeBy tells whether e is the call kind.<fn>("<pkg>").
func madeBy(e ast.Expr, fn, pkg string) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok || len(c.Args) != 1 {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != fn {
		return false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "kind" {
		return false
	}
	lit, ok := c.Args[0].(*ast.BasicLit)
	if !ok {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && s == pkg
}

// isAlias tells whether e is x.<name>: another package's variable of the
// same name.
func isAlias(e ast.Expr, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == name
}

func set(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}
