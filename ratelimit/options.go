package ratelimit

import (
	"time"

	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// Option configures a Limiter. A nil Option is ignored.
type Option func(*config)

type config struct {
	reads, loads Limit
	prefix       string
	instances    int
	timeout      time.Duration
	retryAfter   time.Duration
	maxKeys      int
	errs         option.Errors    // the first invalid option
	now          func() time.Time // test hook: the limiter's clock (time.Now)
}

func defaultConfig() config {
	return config{prefix: wire.RateLimitPrefix, instances: 1, timeout: 100 * time.Millisecond,
		retryAfter: time.Second, maxKeys: 100_000, now: time.Now, errs: option.For(ErrInvalidOption)}
}

// WithReads limits the Redis reads of each key (default: no limit).
func WithReads(l Limit) Option {
	return func(c *config) {
		c.errs.Add(l.check("read"))
		c.reads = l
	}
}

// WithLoads limits the loads (database reads) of each key (default: no limit).
func WithLoads(l Limit) Option {
	return func(c *config) {
		c.errs.Add(l.check("load"))
		c.loads = l
	}
}

// WithInstances says how many instances share the budgets, so that each
// takes 1/n of their rate and burst while Redis fails (default 1: each takes
// the whole budget, and n instances admit n times it). Set it to the largest
// number of instances that may run: a share is never learned from Redis or
// the other instances. Without a Redis client it is ignored: each instance
// has the whole budget.
func WithInstances(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs.Invalid("instances %d must be at least 1", n)
			return
		}
		c.instances = n
	}
}

// WithPrefix sets the prefix of the limiter's Redis keys (default
// "cacheguard:ratelimit:"); the key is prefix + "read:" or "load:" + the cache key.
func WithPrefix(p string) Option {
	return func(c *config) {
		if p == "" {
			c.errs.Invalid("empty prefix")
			return
		}
		c.prefix = p
	}
}

// WithTimeout bounds each Redis call (default 100 ms); past it the local
// share decides.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("timeout %v must be positive", d)
			return
		}
		c.timeout = d
	}
}

// WithRetryAfter sets how long after a failed Redis call the local shares
// decide alone before Redis is asked again (default 1 s).
func WithRetryAfter(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs.Invalid("retry delay %v must not be negative", d)
			return
		}
		c.retryAfter = d
	}
}

// WithMaxKeys bounds the number of local buckets (default 100,000); past
// the bound they are dropped and start again from their share.
func WithMaxKeys(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs.Invalid("max keys %d must be at least 1", n)
			return
		}
		c.maxKeys = n
	}
}

// withClock replaces time.Now as the limiter's clock, so tests can run an
// outage of minutes without sleeping.
func withClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}
