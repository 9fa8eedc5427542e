package cache

import (
	"fmt"
	"time"
)

// Adaptive TTL. WithTTLFunc chooses each value's TTL from the value itself
// (a draft lives a minute, a published article a day). The TTL it returns
// is jittered like WithTTL's and used by every write of a value: a fill (Get
// and GetMany), an early or stale refresh, Set and SetVersioned. An absence
// keeps the null TTL.
//
// The rule for what the func returns:
//
//   - d > 0 (at most the century every TTL option is bounded by): the
//     value is cached for d, jittered, in whole milliseconds and for at
//     least 1 ms (the floor of every expiry written to Redis: a d or a
//     jittered TTL under it is rounded up to it, jitter or not).
//   - 0: the value is not cached. Get and GetMany return it (the fill's
//     lease is released, the local tier does not keep it); Set and
//     SetVersioned remove the key's entry instead of writing it (a
//     versioned write leaves a version tombstone, so older versions are
//     still refused for the null TTL); a refresh (early, or of an entry
//     marked stale) removes the entry it would have replaced in the same
//     way, so the next Get loads again, and the Get that waits for the
//     refresh (WithSoftLoadTimeout) returns the value.
//   - negative, longer than the century, or a panic of the func: as 0, and
//     reported to the error handler with an error wrapping
//     ErrInvalidOption. Stats counts both (TTLZero, TTLInvalid).

// WithTTLFunc sets fn to choose the TTL of each value (see the rule above on 0,
// negative and too long TTLs). V must be the Cache's value
// type: New returns an error wrapping ErrInvalidOption otherwise. WithTTL
// then only sets the default the null TTL is bounded by, and the longest
// TTL of a tagged entry (WithTags): a tag's invalidation time is kept for
// about twice WithTTL, and a tagged entry must not outlive it.
func WithTTLFunc[V any](fn func(key string, v V) time.Duration) Option {
	return func(c *config) {
		if fn == nil {
			c.errs.Invalid("nil TTL func")
			return
		}
		c.ttlFunc = fn
	}
}

// ttlFuncOf returns the TTL func configured for values of type V, or an
// error if it was written for another type.
func ttlFuncOf[V any](cfg config) (func(string, V) time.Duration, error) {
	if cfg.ttlFunc == nil {
		return nil, nil
	}
	fn, ok := cfg.ttlFunc.(func(string, V) time.Duration)
	if !ok {
		var zero V
		return nil, fmt.Errorf("%w: WithTTLFunc for %T on a cache of %T", ErrInvalidOption, cfg.ttlFunc, zero)
	}
	return fn, nil
}
