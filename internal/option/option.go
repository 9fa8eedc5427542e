// Package option holds what the functional options of every package share:
// the text of each package's ErrInvalidOption, the record of the first
// invalid option a constructor was given, the rule that a nil Option is
// ignored, the default logger and the check of a backoff's bounds.
// docs/vocabulary.md lists the options' names; internal/apicheck keeps them.
package option

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Sentinel returns the ErrInvalidOption of package pkg, whose text is
// "cacheguard: <pkg>: invalid option". Each package exports its own, and
// every error its options report wraps it.
func Sentinel(pkg string) error {
	return errors.New("cacheguard: " + pkg + ": invalid option")
}

// Errors keeps the first invalid option a constructor's options reported.
// Its zero value is not usable: make one with For.
type Errors struct {
	sentinel error
	first    error
}

// For returns an empty record whose errors wrap sentinel.
func For(sentinel error) Errors { return Errors{sentinel: sentinel} }

// Invalid records the option that format and args describe, unless one was
// recorded before: "cacheguard: <pkg>: invalid option: <what>".
func (e *Errors) Invalid(format string, args ...any) {
	if e.first == nil {
		e.first = fmt.Errorf("%w: "+format, append([]any{e.sentinel}, args...)...)
	}
}

// Add records err as it is (an error of the constructor's other arguments,
// or an option's error already wrapping the sentinel), unless it is nil or
// an error was recorded before.
func (e *Errors) Add(err error) {
	if err == nil || e.first != nil {
		return
	}
	e.first = err
}

// Err returns the first error recorded, or nil.
func (e *Errors) Err() error { return e.first }

// Backoff records an invalid option unless 0 < min <= max, and tells
// whether the bounds are valid.
func (e *Errors) Backoff(min, max time.Duration) bool {
	if min <= 0 || max < min {
		e.Invalid("backoff %v..%v must satisfy 0 < min <= max", min, max)
		return false
	}
	return true
}

// Apply calls each option of opts on c in order. A nil Option is ignored.
func Apply[C any, O ~func(*C)](c *C, opts []O) {
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
}

// Logger returns l, or slog.Default() when l is nil: the default of every
// WithLogger.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}
