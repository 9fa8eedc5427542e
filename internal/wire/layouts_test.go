package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// valueTold are the layouts a key's name does not tell: the value (or, for
// a Mutex's hash, its fields) does.
var valueTold = map[string]bool{LayoutEntry: true, LayoutCopy: true, LayoutLease: true, LayoutTombstone: true, LayoutMutex: true, LayoutBinlogPosition: true}

// Each key of Layouts is named by KeyLayout, or told by its value as
// Classify and the lock parsers read it.
func TestKeyLayoutNamesEveryLayout(t *testing.T) {
	for _, l := range Layouts() {
		got, ok := KeyLayout(l.Key, l.Type)
		switch {
		case l.Type == "channel":
		case valueTold[l.Name]:
			if ok {
				t.Errorf("%s %q: named %q by its name, which cannot tell it", l.Type, l.Key, got)
			}
		case !ok || got != l.Name:
			t.Errorf("%s %q: KeyLayout = %q, %v; want %q", l.Type, l.Key, got, ok, l.Name)
		}
	}
	for _, c := range []struct{ key, typ string }{
		{"user:42", "string"}, {"user:{42}", "hash"}, {"{a}:due:", "zset"}, {"{a}:bits", "hash"},
		{"cacheguard:hotkey:{g}:x", "zset"}, {"{a:b:c}:m", "hash"}, {"rate:x", "string"}, {"{}:cfg", "string"},
	} {
		if got, ok := KeyLayout(c.key, c.typ); ok {
			t.Errorf("%s %q: KeyLayout = %q, want none", c.typ, c.key, got)
		}
	}
}

// Layouts uses every key constructor of this package (an exported function
// named …Key or …Keys returning no bool), every field of the key sets they
// return, and layouts.go every exported prefix and suffix: a layout added
// to the package without a place in Layouts fails here.
func TestLayoutsListsEveryConstructor(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, n, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files[n] = f
		}
	}
	// What Layouts calls and selects, and what layouts.go names.
	used, named := map[string]bool{}, map[string]bool{}
	ast.Inspect(files["layouts.go"], func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			named[id.Name] = true
		}
		if fd, ok := n.(*ast.FuncDecl); ok && fd.Name.Name == "Layouts" {
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.Ident:
					used[x.Name] = true
				case *ast.SelectorExpr:
					used[x.Sel.Name] = true
				}
				return true
			})
		}
		return true
	})
	structs := map[string]*ast.StructType{}
	for _, f := range files {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok {
				for _, sp := range gd.Specs {
					if ts, ok := sp.(*ast.TypeSpec); ok {
						if st, ok := ts.Type.(*ast.StructType); ok {
							structs[ts.Name.Name] = st
						}
					}
				}
			}
		}
	}
	for name, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				n := d.Name.Name
				if d.Recv != nil || !ast.IsExported(n) || !(strings.HasSuffix(n, "Key") || strings.HasSuffix(n, "Keys")) {
					continue
				}
				var results []string
				for _, r := range d.Type.Results.List {
					results = append(results, types(r))
				}
				if strings.Contains(strings.Join(results, ","), "bool") {
					continue // a parser
				}
				if !used[n] {
					t.Errorf("%s: %s builds keys, and Layouts does not use it", name, n)
				}
				for _, r := range results {
					if st := structs[r]; st != nil {
						for _, fld := range st.Fields.List {
							for _, id := range fld.Names {
								if id.Name != "Prefix" && !used[id.Name] {
									t.Errorf("%s: the key %s.%s is not in Layouts", name, r, id.Name)
								}
							}
						}
					}
				}
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, sp := range d.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						n := id.Name
						if ast.IsExported(n) && (strings.HasSuffix(n, "Prefix") || strings.HasSuffix(n, "Suffix")) && !named[n] {
							t.Errorf("%s: %s is part of a key, and layouts.go does not use it", name, n)
						}
					}
				}
			}
		}
	}
}

// types renders a result's type, once per name it declares.
func types(f *ast.Field) string {
	s := ""
	if id, ok := f.Type.(*ast.Ident); ok {
		s = id.Name
	}
	return strings.Repeat(s+",", max(len(f.Names), 1))
}
