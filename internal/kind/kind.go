// Package kind makes the errors that stand for one concept in every package:
// a Redis failure, a bad argument, a bad option, a closed value. Each public
// package exports its own under one name (cache.ErrRedis, lock.ErrRedis,
// ...), whose text names the package ("cacheguard: lock: redis"). Each
// matches only itself: an error of the user's code that wraps lock.ErrRedis,
// returned through a cache's loader, is the loader's error to the cache, not
// a failure of the cache's Redis. docs/vocabulary.md states the contract;
// internal/apicheck keeps every package to it. Errorf and Wrap keep the
// repository's prefix to one when errors of several packages wrap each
// other.
package kind

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Prefix starts the text of every error of the repository.
const Prefix = "cacheguard: "

// The kinds, as their errors' texts end.
const (
	redisKind    = "redis"
	argumentKind = "invalid argument"
	optionKind   = "invalid option"
	closedKind   = "closed"
)

// sentinel is a package's error of one kind.
type sentinel struct{ pkg, kind string }

func (s *sentinel) Error() string { return Prefix + s.pkg + ": " + s.kind }

// Redis returns package pkg's ErrRedis: Redis failed (unreachable, timed out
// by the package's own bound, an error reply).
func Redis(pkg string) error { return &sentinel{pkg, redisKind} }

// InvalidArgument returns package pkg's ErrInvalidArgument: a call's
// argument was refused (an empty key, a bad name, a negative quantity).
func InvalidArgument(pkg string) error { return &sentinel{pkg, argumentKind} }

// InvalidOption returns package pkg's ErrInvalidOption: a constructor's
// option was refused (a value that makes no sense, an option of another
// constructor).
func InvalidOption(pkg string) error { return &sentinel{pkg, optionKind} }

// Closed returns package pkg's ErrClosed: the value was closed.
func Closed(pkg string) error { return &sentinel{pkg, closedKind} }

// Wrap returns err wrapped in sentinel, saying what failed: "<sentinel>:
// <what>: <err>" (what may be empty), matching both. err comes back as it
// is when it is nil or already matches sentinel. When err's text starts with
// Prefix (an error of this repository) that prefix is not repeated, nor the
// package's name when it is sentinel's: "cacheguard: lock: not obtained:
// redis: call timed out".
func Wrap(sentinel error, what string, err error) error {
	if err == nil || errors.Is(err, sentinel) {
		return err
	}
	return &wrapped{sentinel: sentinel, what: what, err: err}
}

// RedisErr is Wrap for the error of a Redis call made under ctx: once ctx
// has ended (Ended), the caller gave up and nothing failed, so its error
// comes back as it is when err is of it, else ctx's error in place of err;
// any other error is a Redis failure.
func RedisErr(ctx context.Context, sentinel error, what string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := Ended(ctx); cerr != nil {
		if errors.Is(err, cerr) {
			return err
		}
		return cerr
	}
	return Wrap(sentinel, what, err)
}

// Ended returns ctx's error once the caller's context has ended, or
// context.DeadlineExceeded once its deadline has passed; nil before. With
// ContextTimeoutEnabled, go-redis sets the socket's deadline to the
// context's and reports a read cut by it as a network timeout, which can
// come a moment before the context's timer marks the context done: that
// error is the caller's deadline, not a failure of Redis.
func Ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// Errorf is fmt.Errorf for an error that wraps others of this repository:
// its text names Prefix once. A later "cacheguard: " is dropped, and so is
// the package name after it when it is the first one's: "cacheguard: lock:
// renew %q: %w" of a lock Redis failure reads "cacheguard: lock: renew "a":
// redis: ...". errors.Is and errors.As see the wrapped errors as fmt.Errorf
// leaves them.
func Errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if text := oncePrefixed(err.Error()); text != err.Error() {
		return &retexted{err: err, text: text}
	}
	return err
}

// oncePrefixed drops from each line of s (errors.Join puts one error a
// line) every Prefix after the line's first, and the package name after one
// when it is the first one's.
func oncePrefixed(s string) string {
	if strings.Count(s, Prefix) < 2 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = oncePrefixedLine(l)
	}
	return strings.Join(lines, "\n")
}

func oncePrefixedLine(s string) string {
	first := strings.Index(s, Prefix)
	if first < 0 || !strings.Contains(s[first+len(Prefix):], Prefix) {
		return s
	}
	head := s[:first+len(Prefix)]
	rest := s[first+len(Prefix):]
	pkg, _, _ := strings.Cut(rest, ": ")
	var b strings.Builder
	b.WriteString(head)
	for {
		i := strings.Index(rest, Prefix)
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		b.WriteString(rest[:i])
		rest = strings.TrimPrefix(rest[i+len(Prefix):], pkg+": ")
	}
}

// retexted is an error whose text was made to name Prefix once.
type retexted struct {
	err  error
	text string
}

func (r *retexted) Error() string { return r.text }

func (r *retexted) Unwrap() []error {
	switch u := r.err.(type) {
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	case interface{ Unwrap() error }:
		return []error{u.Unwrap()}
	}
	return nil
}

// wrapped is an error wrapped in a sentinel by Wrap.
type wrapped struct {
	sentinel error
	what     string
	err      error
}

func (w *wrapped) Error() string {
	if w.what != "" {
		return oncePrefixed(w.sentinel.Error() + ": " + w.what + ": " + w.err.Error())
	}
	return oncePrefixed(w.sentinel.Error() + ": " + w.err.Error())
}

func (w *wrapped) Unwrap() []error { return []error{w.sentinel, w.err} }
