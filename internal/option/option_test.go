package option

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
)

var errPkg = kind.InvalidOption("pkg")

// The first invalid option is kept, formatted under the package's prefix,
// and matches the package's sentinel; an error added is kept as it is.
func TestErrorsKeepTheFirst(t *testing.T) {
	e := For(errPkg)
	if e.Err() != nil {
		t.Fatalf("empty record: %v", e.Err())
	}
	e.Invalid("size %d", -1)
	e.Invalid("second")
	e.Add(errors.New("third"))
	if got, want := e.Err().Error(), "cacheguard: pkg: invalid option: size -1"; got != want {
		t.Errorf("Err() = %q, want %q", got, want)
	}
	if !errors.Is(e.Err(), errPkg) {
		t.Errorf("Err() does not match the sentinel")
	}

	other := errors.New("cacheguard: pkg: bad name")
	e = For(errPkg)
	e.Add(nil)
	e.Add(other)
	e.Invalid("later")
	if e.Err() != other {
		t.Errorf("Add(%v) then Invalid: Err() = %v, want the added error", other, e.Err())
	}
}

func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		min, max time.Duration
		ok       bool
	}{{time.Millisecond, time.Second, true}, {time.Second, time.Second, true},
		{0, time.Second, false}, {-1, time.Second, false}, {time.Second, time.Millisecond, false}} {
		e := For(errPkg)
		if ok := e.Backoff(c.min, c.max); ok != c.ok || (e.Err() == nil) != c.ok {
			t.Errorf("Backoff(%v, %v) = %v, err %v; want %v", c.min, c.max, ok, e.Err(), c.ok)
		}
	}
}

type config struct{ n int }
type opt func(*config)

func TestApplyIgnoresNil(t *testing.T) {
	var c config
	Apply(&c, []opt{func(c *config) { c.n++ }, nil, func(c *config) { c.n += 10 }})
	if c.n != 11 {
		t.Errorf("n = %d, want 11", c.n)
	}
}

func TestLoggerDefault(t *testing.T) {
	if Logger(nil) != slog.Default() {
		t.Error("Logger(nil) is not slog.Default()")
	}
	l := slog.New(slog.DiscardHandler)
	if Logger(l) != l {
		t.Error("Logger(l) is not l")
	}
}

// Warn reaches the logger and the handler; a nil handler is skipped.
func TestReporterWarns(t *testing.T) {
	var logged int
	l := slog.New(countHandler{&logged})
	var got error
	boom := errors.New("boom")
	NewReporter(l, func(err error) { got = err }).Warn("renewal failed", boom, "lock", "a")
	if logged != 1 || got != boom {
		t.Errorf("logged %d, handled %v", logged, got)
	}
	NewReporter(l, nil).Warn("again", boom)
	if logged != 2 {
		t.Errorf("logged %d, want 2", logged)
	}
	if NewReporter(nil, nil).Logger != slog.Default() {
		t.Error("a nil logger is not slog.Default()")
	}
}

type countHandler struct{ n *int }

func (h countHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h countHandler) Handle(context.Context, slog.Record) error { *h.n++; return nil }
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h countHandler) WithGroup(string) slog.Handler             { return h }

// Only records an option given to the constructor of a part it does not
// configure, and lets it through otherwise.
func TestOnlyRefusesOtherParts(t *testing.T) {
	const a, b, c Part = 1, 2, 4
	names := PartNames{{a, "an A"}, {b, "a B"}, {c, "a C"}}
	e := For(errPkg)
	if !e.Only("WithX", a|b, b, names) || e.Err() != nil {
		t.Fatalf("WithX refused for a B: %v", e.Err())
	}
	if e.Only("WithX", a|b, c, names) {
		t.Fatal("WithX applied to a C")
	}
	if got, want := e.Err().Error(), "cacheguard: pkg: invalid option: WithX configures an A or a B, not a C"; got != want || !errors.Is(e.Err(), errPkg) {
		t.Errorf("Err() = %q, want %q", got, want)
	}
}

// Prefix refuses a brace, which would change the hash tag after it.
func TestPrefixRefusesBraces(t *testing.T) {
	for prefix, ok := range map[string]bool{"": true, "app:lock:": true, "a{b": false, "c}": false} {
		e := For(errPkg)
		if got := e.Prefix(prefix); got != ok || (e.Err() == nil) != ok {
			t.Errorf("Prefix(%q) = %v, err %v; want %v", prefix, got, e.Err(), ok)
		}
	}
}
