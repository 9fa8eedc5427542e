package cache

import "context"

// Filter is a membership filter that answers "definitely absent" so that
// requests for keys that exist nowhere reach neither the database nor, for a
// filter in front of Redis, Redis (penetration). A Bloom filter fits: it may
// say true for an absent key (null caching catches those) but never false for
// a present one. A filter that is still warming up must answer true. The
// bloom package provides a local and a Redis-shared implementation.
//
// A filter error never fails a read: the read goes on as if there were no
// filter, and the error is counted (Stats.FilterErrors) and reported.
type Filter interface {
	MayContain(ctx context.Context, key string) (bool, error)
}

// WithBloom puts filter in front of Redis: a negative answer returns
// ErrNotFound without a Redis call. Use it for an in-process filter, whose
// answer costs well under a microsecond. Rows inserted into the database must
// be added to the filter too, or they stay invisible.
func WithBloom(filter Filter) Option {
	return func(c *config) {
		if filter == nil {
			c.errs.Invalid("nil filter")
		}
		c.filter = filter
	}
}

// WithBloomOnMiss consults filter only after Redis had no entry for the key,
// before taking the fill lease. Use it for a filter that lives in Redis: in
// front of every read it would add a round trip to each hit, while after a
// miss it costs one only when the database would otherwise be asked.
func WithBloomOnMiss(filter Filter) Option {
	return func(c *config) {
		if filter == nil {
			c.errs.Invalid("nil filter")
		}
		c.missFilter = filter
	}
}
