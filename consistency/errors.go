package consistency

import (
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// ErrInvalidOption is wrapped by the error of an option or a target option
// that makes no sense (New, Register).
var ErrInvalidOption = kind.InvalidOption("consistency")

// ErrInvalidArgument is wrapped by the error of any other argument refused:
// a nil client, an empty target name or key, a negative delay, version 0.
var ErrInvalidArgument = kind.InvalidArgument("consistency")

// ErrRedis is wrapped by the error of a Redis call that failed (the end of
// the caller's own context comes back as it is).
var ErrRedis = kind.Redis("consistency")

// TargetError is how the error handler (WithErrorHandler) is told of an
// error: Target and Keys say which deletes it is about (Keys may be empty),
// Err is the error (errors.Is and errors.As see through it).
type TargetError struct {
	Target string
	Keys   []string
	Err    error
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("%v (target %q, keys %q)", e.Err, e.Target, e.Keys)
}

// Unwrap returns Err.
func (e *TargetError) Unwrap() error { return e.Err }

// ErrClosed is returned by calls made after Close.
var ErrClosed = kind.Closed("consistency")

// ErrQueued is wrapped by the error Invalidate returns when the delete failed
// but was recorded in the queue, so it will be retried in the background
// (and dead-lettered if it keeps failing).
var ErrQueued = errors.New("cacheguard: consistency: delete failed and was queued for retry")

// ErrUnknownTarget is returned for a target name that was never registered.
var ErrUnknownTarget = errors.New("cacheguard: consistency: unknown invalidation target")

// ErrDuplicateTarget is returned by Register for a name already registered.
var ErrDuplicateTarget = errors.New("cacheguard: consistency: invalidation target already registered")
