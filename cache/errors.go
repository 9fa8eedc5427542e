package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/redis/go-redis/v9"
)

// ErrNotFound reports a missing row. A Loader returns it (or an error wrapping
// it) when the source of truth has no row for the key; the absence is then
// cached for the null TTL, and Get returns ErrNotFound for it until then.
var ErrNotFound = errors.New("cacheguard: cache: not found")

// ErrWaitTimeout is returned by Get when another caller holds the fill lease
// for a key and has not filled it within the wait budget (WithWait). The
// database is not queried in that case unless WithLoadOnWaitTimeout is set.
var ErrWaitTimeout = errors.New("cacheguard: cache: timed out waiting for another caller's fill")

// ErrInvalidKey is returned for an empty key.
var ErrInvalidKey = errors.New("cacheguard: cache: invalid key")

// ErrNilLoader is returned when Get or GetMany is called without a loader.
var ErrNilLoader = errors.New("cacheguard: cache: nil loader")

// ErrValueTooLarge is returned by Set for a value whose encoded size exceeds
// the limit (WithMaxValueSize). Get returns such a loaded value to its caller
// but does not cache it, and reports ErrValueTooLarge to the error handler.
var ErrValueTooLarge = errors.New("cacheguard: cache: value too large")

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("cacheguard: cache: closed")

// ErrRedis wraps every error that comes from Redis itself (unreachable,
// timeout, script failure), so callers can tell a cache outage from a loader
// error with errors.Is(err, ErrRedis).
var ErrRedis = errors.New("cacheguard: cache: redis")

// ErrInvalidOption is returned by New for an option value that makes no sense.
var ErrInvalidOption = option.Sentinel("cache")

// KeyError is how the error handler (WithErrorHandler) is told of an error
// about one key: Key names it, Err is the error (errors.Is and errors.As see
// through it).
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("%v (key %q)", e.Err, e.Key) }

// Unwrap returns Err.
func (e *KeyError) Unwrap() error { return e.Err }

// ErrSubscriptionRefused is reported (to the logger and WithErrorHandler,
// and counted in Stats.SubscriptionRefusals) when Redis refuses the cache's
// subscription to its channels with NOPERM: the Redis user lacks a channel
// permission docs/acl.md lists. The cache goes on in the degraded mode that
// document describes (no local tier) and subscribes again after a backoff,
// so a permission granted later is picked up.
var ErrSubscriptionRefused = errors.New("cacheguard: cache: subscription refused by the Redis ACL")

// isCtxErr reports a context's own error (the caller gave up; nothing failed).
func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// isWrongType reports a WRONGTYPE reply: the key holds another Redis type.
func isWrongType(err error) bool { return err != nil && redis.HasErrorPrefix(err, "WRONGTYPE") }
