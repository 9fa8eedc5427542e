package apicheck

import (
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Prefix starts every error string of every module of the repository.
const Prefix = "cacheguard: "

// prefixLike matches a string that starts with a prefix of some kind: one
// word followed by a colon ("lock: ...", "stock: ..."), or any spelling of
// the project's name ("cacheguard binlog: ...").
var prefixLike = regexp.MustCompile(`^([a-z][A-Za-z0-9_./-]*: |cacheguard)`)

// ErrorPrefixes fails t for every error string in the non-test Go files of
// the module rooted at dir (modules nested below it are theirs to check)
// that uses a prefix other than Prefix: the first argument of errors.New and
// fmt.Errorf when it starts like a prefix, and the text of every exported
// error variable (Err...) of a package outside internal/, which must start
// with Prefix (or with "%w: ", wrapping an error that does). Outside
// internal/ and commands, a string that starts with Prefix goes on with the
// package's name ("cacheguard: lock: ").
func ErrorPrefixes(t testing.TB, dir string) {
	t.Helper()
	for _, f := range parse(t, dir) {
		internal := strings.HasPrefix(f.path, "internal/") || strings.Contains(f.path, "/internal/")
		exported := exportedErrors(f.ast)
		pkg := f.ast.Name.Name // "" where the package name is not the one users see
		if internal || pkg == "main" {
			pkg = ""
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) == 0 || !isErrorCall(c) {
				return true
			}
			s, ok := leadingString(c.Args[0])
			if !ok {
				return true
			}
			if prefixLike.MatchString(s) && !strings.HasPrefix(s, Prefix) {
				t.Errorf("%s: error string %q: want the prefix %q", f.pos(c.Pos()), s, Prefix)
			}
			// A package's own errors name it after the prefix, so that a
			// message says which package it comes from.
			if own := Prefix + pkg + ": "; pkg != "" && strings.HasPrefix(s, Prefix) && !strings.HasPrefix(s, own) {
				t.Errorf("%s: error string %q: want %q after the prefix", f.pos(c.Pos()), s, own)
			}
			// An exported error may start by wrapping another ("%w: …"),
			// whose text carries the prefix.
			if name := exported[c]; name != "" && !internal && !strings.HasPrefix(s, Prefix) && !strings.HasPrefix(s, "%w: ") {
				t.Errorf("%s: %s = %q: an exported error starts with %q", f.pos(c.Pos()), name, s, Prefix)
			}
			return true
		})
	}
}

// exportedErrors maps the calls that make the file's exported package-level
// Err variables to the variables' names.
func exportedErrors(f *ast.File) map[*ast.CallExpr]string {
	out := map[*ast.CallExpr]string{}
	for name, v := range packageVars(f) {
		if !ast.IsExported(name) || !strings.HasPrefix(name, "Err") {
			continue
		}
		if c, ok := v.(*ast.CallExpr); ok && isErrorCall(c) {
			out[c] = name
		}
	}
	return out
}

// isErrorCall tells whether c calls errors.New, fmt.Errorf or kind.Errorf
// (internal/kind).
func isErrorCall(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	return pkg.Name == "errors" && sel.Sel.Name == "New" || (pkg.Name == "fmt" || pkg.Name == "kind") && sel.Sel.Name == "Errorf"
}

// leadingString returns the string literal that e starts with: e itself, or
// the leftmost operand of a concatenation.
func leadingString(e ast.Expr) (string, bool) {
	for {
		switch x := e.(type) {
		case *ast.BinaryExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.BasicLit:
			if x.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		default:
			return "", false
		}
	}
}
