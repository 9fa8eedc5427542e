package consistency

import (
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/internal/option"
)

// ErrInvalidOption is wrapped by the error of an option, a target option or
// an argument that makes no sense (New, Register, Update, NewVersioned).
var ErrInvalidOption = option.Sentinel("consistency")

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
var ErrClosed = errors.New("cacheguard: consistency: queue closed")

// ErrQueued is wrapped by the error Invalidate returns when the delete failed
// but was recorded in the queue, so it will be retried in the background
// (and dead-lettered if it keeps failing).
var ErrQueued = errors.New("cacheguard: consistency: delete failed and was queued for retry")

// ErrUnknownTarget is returned for a target name that was never registered.
var ErrUnknownTarget = errors.New("cacheguard: consistency: unknown invalidation target")

// ErrDuplicateTarget is returned by Register for a name already registered.
var ErrDuplicateTarget = errors.New("cacheguard: consistency: invalidation target already registered")
