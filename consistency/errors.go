package consistency

import "errors"

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("cacheguard: consistency queue closed")

// ErrQueued is wrapped by the error Invalidate returns when the delete failed
// but was recorded in the queue, so it will be retried in the background
// (and dead-lettered if it keeps failing).
var ErrQueued = errors.New("cacheguard: delete failed and was queued for retry")

// ErrUnknownTarget is returned for a target name that was never registered.
var ErrUnknownTarget = errors.New("cacheguard: unknown invalidation target")

// ErrDuplicateTarget is returned by Register for a name already registered.
var ErrDuplicateTarget = errors.New("cacheguard: invalidation target already registered")
