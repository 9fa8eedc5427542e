package apicheck

import (
	"strings"
	"testing"
)

// Each kind of inconsistency is reported, with its place: a synonym, a
// shared option with another signature than the vocabulary's, one name with
// two signatures in two packages (one of them in a nested module), a
// package with options and no ErrInvalidOption. What is allowed (the same
// signature twice, whatever its parameters' names, internal packages, test
// files, unexported options, functions that return no option) is not.
func TestVocabularyReports(t *testing.T) {
	dir := tree(t, map[string]string{
		"a/a.go": `package a

import ("errors"; "time")

var ErrInvalidOption = errors.New("cacheguard: a: invalid option")

type Option func(*int)

func WithNamespace(ns string) Option { return nil }
func WithTimeout(d int) Option { return nil }
func WithWindow(d time.Duration) Option { return nil }
func WithShards(n int) Option { return nil }
func WithFilter(keep func(string) (ok bool)) Option { return nil }
func withHooks(h int) Option { return nil }
func WithNothing(n string) int { return 0 }
`,
		"a/a_test.go": "package a\n\nfunc WithOpTimeout(d int) Option { return nil }\n",
		"b/go.mod":    "module b\n",
		"b/b.go": `package b

import "time"

type TargetOption func(*int) error

func WithWindow(n int) TargetOption { return nil }
func WithShards(n int) TargetOption { return nil }
func WithBackoff(min, max time.Duration) TargetOption { return nil }
func WithErrorHandler(fn func(err error)) TargetOption { return nil }
func WithFilter(keep func(key string) bool) TargetOption { return nil }
`,
		"internal/c/c.go": "package c\n\ntype Option func()\n\nfunc WithBatch(n int) Option { return nil }\n",
	})
	r := &recorder{TB: t}
	pkgs := Vocabulary(r, dir)
	want := []string{
		`a/a.go:9: WithNamespace: the repository calls this option WithPrefix`,
		`a/a.go:10: WithTimeout(int): every package's WithTimeout takes (time.Duration)`,
		`b: package declares options (WithWindow) but no ErrInvalidOption`,
		`b/b.go:7: WithWindow(int), but a/a.go:11 declares WithWindow(time.Duration)`,
	}
	if len(r.errs) != len(want) {
		t.Fatalf("reported %d:\n%s\nwant %d", len(r.errs), strings.Join(r.errs, "\n"), len(want))
	}
	for i, w := range want {
		if r.errs[i] != w {
			t.Errorf("report %d: %s\nwant %s", i, r.errs[i], w)
		}
	}
	if strings.Join(pkgs, " ") != "a b" {
		t.Errorf("packages with options: %v, want [a b]", pkgs)
	}
}
