package apicheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what the checks report.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// tree writes files (path: content) under a temporary directory.
func tree(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Each kind of foreign prefix is reported once, with its place; what is
// allowed (the prefix, a wrapped sentinel first, a sentence, test files,
// nested modules, unexported errors of internal packages) is not.
func TestErrorPrefixesReports(t *testing.T) {
	dir := tree(t, map[string]string{
		"a/a.go": `package a

import ("errors"; "fmt")

var ErrGood = errors.New("cacheguard: a: good")
var ErrBad = errors.New("a: bad")
var ErrBare = errors.New("no prefix at all")

func f(err error) error {
	_ = fmt.Errorf("%w: wrapped", ErrGood)
	_ = fmt.Errorf("loader panicked: %v", err)
	_ = fmt.Errorf("cacheguard a: %w", err)
	return fmt.Errorf("a: "+"joined %w", err)
}
`,
		"a/a_test.go":     "package a\n\nimport \"errors\"\n\nvar errT = errors.New(\"a: in a test\")\n",
		"internal/b/b.go": "package b\n\nimport \"errors\"\n\nvar ErrInside = errors.New(\"no prefix, internal\")\n",
		"nested/go.mod":   "module nested\n",
		"nested/n.go":     "package n\n\nimport \"errors\"\n\nvar ErrN = errors.New(\"n: its own module\")\n",
		"testdata/x/x.go": "package x\n\nimport \"errors\"\n\nvar ErrX = errors.New(\"x: data\")\n",
	})
	r := &recorder{TB: t}
	ErrorPrefixes(r, dir)
	want := []string{
		`a/a.go:6: error string "a: bad"`,
		`a/a.go:6: ErrBad = "a: bad"`,
		`a/a.go:7: ErrBare = "no prefix at all"`,
		`a/a.go:12: error string "cacheguard a: %w"`,
		`a/a.go:13: error string "a: "`,
	}
	if len(r.errs) != len(want) {
		t.Fatalf("reported %d:\n%s\nwant %d", len(r.errs), strings.Join(r.errs, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(r.errs[i], w) {
			t.Errorf("report %d: %s\nwant it to start with %s", i, r.errs[i], w)
		}
	}
}

// Contract reports a shared error made by hand, a synonym, an ErrInvalid of
// its own, a Redis package without ErrRedis, and a logger without an error
// handler; an alias of an internal package's error and a properly made one
// pass.
func TestContractReports(t *testing.T) {
	dir := tree(t, map[string]string{
		"a/a.go": `package a

import ("errors"; "github.com/redis/go-redis/v9"; "example/internal/kind")

var _ redis.Cmdable
var ErrRedis = errors.New("cacheguard: a: redis")
var ErrClosed = kind.Closed("b")
var ErrTimeout = errors.New("cacheguard: a: timeout")
var ErrInvalidKey = errors.New("cacheguard: a: invalid key")

type Option func()

func WithLogger() Option { return nil }
`,
		"b/b.go": `package b

import ("github.com/redis/go-redis/v9"; "example/b/internal/errs"; "example/internal/kind")

var _ redis.Cmdable
var ErrRedis = errs.ErrRedis
var ErrInvalidArgument = kind.InvalidArgument("b")
`,
		"b/internal/errs/errs.go": "package errs\n\nimport \"example/internal/kind\"\n\nvar ErrRedis = kind.Redis(\"b\")\n",
		"c/c.go":                  "package c\n\nimport \"github.com/redis/go-redis/v9\"\n\nvar _ redis.Cmdable\n",
		"d/d.go":                  "package d\n\ntype D struct{}\n\nfunc (*D) Close() {}\n\ntype e struct{}\n\nfunc (e) Close() {}\n",
	})
	r := &recorder{TB: t}
	got := Contract(r, dir)
	want := []string{
		`a/a.go:6: ErrRedis must be kind.Redis("a")`,
		`a/a.go:7: ErrClosed must be kind.Closed("a")`,
		`a/a.go:8: ErrTimeout: the repository calls this error ErrRedis`,
		`a/a.go:9: ErrInvalidKey: a bad argument is ErrInvalidArgument`,
		`c: the package calls Redis but exports no ErrRedis`,
		`a: a package that reports what no caller sees has both`,
		`d/d.go:5: D.Close() (): every Close is Close() (error)`,
	}
	if len(r.errs) != len(want) {
		t.Fatalf("reported %d:\n%s\nwant %d", len(r.errs), strings.Join(r.errs, "\n"), len(want))
	}
	for _, w := range want {
		found := false
		for _, e := range r.errs {
			found = found || strings.HasPrefix(e, w)
		}
		if !found {
			t.Errorf("no report starts with %s; got:\n%s", w, strings.Join(r.errs, "\n"))
		}
	}
	if strings.Join(got, ",") != "a,b" {
		t.Errorf("packages with ErrRedis: %v, want [a b]", got)
	}
}
