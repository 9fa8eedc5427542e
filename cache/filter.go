package cache

import "context"

// Filter is a membership filter consulted before Redis: when it answers
// false, the key exists nowhere and Get returns ErrNotFound without touching
// Redis or the loader (penetration). A Bloom filter fits: it may say true for
// an absent key (null caching catches those) but never false for a present
// one. The bloom package provides a local and a Redis-shared implementation.
//
// A filter error never fails a read: the read goes on as if there were no
// filter, and the error is counted (Stats.FilterErrors) and reported.
type Filter interface {
	MayContain(ctx context.Context, key string) (bool, error)
}

// readiness is implemented by filters that are still warming up; until Ready
// reports true their negative answers are not trusted.
type readiness interface{ Ready() bool }

// WithBloom puts filter in front of the read path. Rows inserted into the
// database must be added to the filter too, or they stay invisible.
func WithBloom(filter Filter) Option {
	return func(c *config) {
		if filter == nil {
			c.invalid("nil filter")
		}
		c.filter = filter
	}
}

// filterSaysAbsent consults the filter; it returns true only for a definite,
// trusted "absent".
func (c *Cache[V]) filterSaysAbsent(ctx context.Context, key string) bool {
	f := c.cfg.filter
	if f == nil {
		return false
	}
	if r, ok := f.(readiness); ok && !r.Ready() {
		return false
	}
	ok, err := f.MayContain(ctx, key)
	if err != nil {
		c.stats.filterErrors.Add(1)
		c.report(key, err)
		return false
	}
	if !ok {
		c.stats.filterRejects.Add(1)
	}
	return !ok
}
