package apicheck

import (
	"go/ast"
	"strings"
	"testing"
)

// OptionsDocumented fails t for every exported function in the non-test Go
// files below root (every module's) that returns an option, a type named
// Option or ending in Option, and has no doc comment starting with its name.
func OptionsDocumented(t testing.TB, root string) {
	t.Helper()
	n := 0
	for _, f := range parse(t, root, true) {
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || !returnsOption(fn.Type) {
				continue
			}
			n++
			if fn.Doc == nil || !strings.HasPrefix(fn.Doc.Text(), fn.Name.Name+" ") {
				t.Errorf("%s: option %s has no doc comment starting with its name", f.pos(fn.Pos()), fn.Name.Name)
			}
		}
	}
	if n == 0 {
		t.Errorf("apicheck: no option found below %s", root)
	}
}

// returnsOption tells whether ft returns exactly one value of an option type.
func returnsOption(ft *ast.FuncType) bool {
	if ft.Results == nil || len(ft.Results.List) != 1 || len(ft.Results.List[0].Names) > 1 {
		return false
	}
	return isOptionType(ft.Results.List[0].Type)
}

func isOptionType(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return strings.HasSuffix(x.Name, "Option")
	case *ast.SelectorExpr:
		return strings.HasSuffix(x.Sel.Name, "Option")
	case *ast.IndexExpr:
		return isOptionType(x.X)
	case *ast.IndexListExpr:
		return isOptionType(x.X)
	case *ast.StarExpr:
		return isOptionType(x.X)
	}
	return false
}
