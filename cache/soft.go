package cache

import "time"

// The soft load timeout. WithLoadTimeout is the hard limit of a load: past
// it the load is cancelled and nothing is cached. WithSoftLoadTimeout(d) is
// how long a Get that holds an older value is willing to wait for a fresh
// one:
//
//   - an entry read from Redis that is due for a reload (stale after
//     MarkStale, or picked for an early refresh) is reloaded by the Get
//     that found it, which waits up to d for the refresh to land and
//     returns the refreshed value, or the entry it read; a reloaded value
//     not to be cached (Values.TTL answered 0) removes the entry instead
//     of replacing it and is returned all the same (see Values.TTL);
//   - a Get whose local tier holds an expired entry still within its stale
//     bound (WithLocalStale), and whose read goes on to a fill, waits up to
//     d for the fill and returns the expired entry past it.
//
// Either way the load goes on in the background (tracked like other
// background work: Close cancels it and waits) and lands as any fill or
// refresh does, through its lease or its header compare-and-set, so a write
// that lands meanwhile still refuses it. Without the option a stale Redis
// entry is returned at once (its refresh runs in the background) and a
// local entry is served past its freshness only when Redis fails.

// WithSoftLoadTimeout makes a Get that holds a stale value wait at most d
// for its reload before returning the stale value; the reload then finishes
// in the background and lands (see the comment above). d must be positive and shorter
// than the load timeout (WithLoadTimeout), which stays the hard limit of
// every load. Get only: GetMany returns stale entries at once.
func WithSoftLoadTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("soft load timeout %v must be positive", d)
		}
		c.softLoadTimeout = d
	}
}
