package cache

import (
	"fmt"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
)

// ErrNotFound reports a missing row. A Loader returns it (or an error wrapping
// it) when the source of truth has no row for the key; the absence is then
// cached for the null TTL, and Get returns ErrNotFound for it until then.
var ErrNotFound = errs.ErrNotFound

// ErrWaitTimeout is returned by Get when another caller holds the fill lease
// for a key and has not filled it within the wait budget (WithWait). The
// database is not queried in that case unless WithLoadOnWaitTimeout is set.
var ErrWaitTimeout = errs.ErrWaitTimeout

// ErrInvalidArgument is matched by the error of a call given an argument it
// refuses: an empty key or one that begins with byte 0xFF (reserved for the
// keys of generations, see Clear), a nil loader, a tag list outside the
// limits (by Set and InvalidateTags; reported for a fill). Every package
// names its bad argument so (docs/vocabulary.md, "Errors").
var ErrInvalidArgument = errs.ErrInvalidArgument

// ErrValueTooLarge is returned by Set for a value whose encoded size exceeds
// the limit (WithMaxValueSize). Get returns such a loaded value to its caller
// but does not cache it, and reports ErrValueTooLarge to the error handler.
var ErrValueTooLarge = errs.ErrValueTooLarge

// ErrClosed is returned by calls made after Close.
var ErrClosed = errs.ErrClosed

// ErrRedis wraps every error that comes from Redis itself (unreachable,
// timeout, script failure), so callers can tell a cache outage from a loader
// error with errors.Is(err, ErrRedis). The end of the caller's own context
// is not a Redis failure: it comes back as context.Canceled or
// context.DeadlineExceeded. Every package that calls Redis names its
// failure so (docs/vocabulary.md, "Errors"); each matches only its own
// package's failures, so a loader's error that wraps lock.ErrRedis stays the
// loader's error.
var ErrRedis = errs.ErrRedis

// ErrInvalidOption is returned by New for an option value that makes no sense.
var ErrInvalidOption = errs.ErrInvalidOption

// ErrCircuitOpen is wrapped (together with ErrRedis) in errors returned while
// the circuit breaker keeps calls away from Redis (WithCircuitBreaker).
var ErrCircuitOpen = errs.ErrCircuitOpen

// ErrReplicaLag is wrapped (together with ErrRedis) in the error of a write
// that the replicas a read may go to did not all acknowledge within
// WithReplicaReads's bound. The write reached the master; until those
// replicas catch up, a read that goes to one of them may return the older
// value. Try the write again (a consistency.Queue does).
var ErrReplicaLag = errs.ErrReplicaLag

// ErrRateLimited is returned by Get when the key's rate limit refused the
// Redis read or the load it needed and no local entry could answer instead
// (WithKeyRateLimit).
var ErrRateLimited = errs.ErrRateLimited

// ErrUnsupportedServer is returned by New when a Redis server reports a
// version older than 7.0: fills take their lease with SET NX GET, which older
// servers reject, so every miss would fail.
var ErrUnsupportedServer = errs.ErrUnsupportedServer

// ErrSubscriptionRefused is reported (to the logger and WithErrorHandler,
// and counted in Stats.SubscriptionRefusals) when Redis refuses the cache's
// subscription to its channels with NOPERM: the Redis user lacks a channel
// permission docs/acl.md lists. The cache goes on in the degraded mode that
// document describes (no local tier) and subscribes again after a backoff,
// so a permission granted later is picked up.
var ErrSubscriptionRefused = errs.ErrSubscriptionRefused

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
