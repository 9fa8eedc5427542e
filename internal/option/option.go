// Package option holds what the functional options of every package share:
// the record of the first invalid option a constructor was given (each
// package's ErrInvalidOption comes from internal/kind), the rule that a nil
// Option is ignored, an option given to a constructor it does not configure
// (Errors.Only), the default logger and its error handler (Reporter), and
// the checks of a backoff's bounds and a key prefix.
// docs/vocabulary.md lists the options' names; internal/apicheck keeps them.
package option

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

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

// Reporter hands an error no caller sees (a background renewal, a cleanup,
// a lost subscription) to a package's logger (WithLogger) and its error
// handler (WithErrorHandler): every package that has one has both.
type Reporter struct {
	Logger  *slog.Logger // never nil once made by NewReporter
	Handler func(error)  // nil: the logger only
}

// NewReporter returns a Reporter on l (slog.Default() when nil) and h.
func NewReporter(l *slog.Logger, h func(error)) Reporter {
	return Reporter{Logger: Logger(l), Handler: h}
}

// Warn logs msg at warning level with attrs and err, then hands err to the
// handler. A handler that panics is not recovered: it is the caller's code.
func (r Reporter) Warn(msg string, err error, attrs ...any) {
	r.Logger.Warn(msg, append(attrs, "err", err)...)
	r.Handle(err)
}

// Handle hands err to the handler, without logging it (an error the
// package already logged once, as the first of an outage).
func (r Reporter) Handle(err error) {
	if r.Handler != nil {
		r.Handler(err)
	}
}

// Part is what a constructor builds, one bit each; a package whose Option
// type configures several constructors names its own parts.
type Part uint16

// PartNames names a package's parts, in the order its messages list them.
type PartNames []struct {
	Part Part
	Name string
}

// Describe names the set of parts p: "a Client or a Redlock".
func (n PartNames) Describe(p Part) string {
	var names []string
	for _, pn := range n {
		if p&pn.Part != 0 {
			names = append(names, pn.Name)
		}
	}
	return strings.Join(names, " or ")
}

// Only records that option name, which configures the parts set, was given
// to the constructor of built, unless built is among them; it reports
// whether the option applies.
func (e *Errors) Only(name string, parts, built Part, names PartNames) bool {
	if built&parts != 0 {
		return true
	}
	e.Invalid("%s configures %s, not %s", name, names.Describe(parts), names.Describe(built))
	return false
}

// Prefix records an invalid option unless prefix, a key prefix that
// precedes a hash tag, is free of '{' and '}' (which would change the tag),
// and tells whether it is.
func (e *Errors) Prefix(prefix string) bool {
	if strings.ContainsAny(prefix, "{}") {
		e.Invalid("key prefix %q contains '{' or '}'", prefix)
		return false
	}
	return true
}
