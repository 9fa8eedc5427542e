package cache

// Bounds on what reaches the database: WithMaxLoads caps the loads running
// at once, and WithFallbackLoads lets a bounded number of loads through while
// Redis is unavailable (what a Get does then: see WithCircuitBreaker).

// WithFallbackLoads lets Get call its loader directly, without caching, when
// Redis is unavailable, with at most n such loads running at once in this
// process (callers of one key share a load). Callers beyond the cap get the
// Redis error. Off (0) by default: an outage of Redis then costs the database
// nothing.
func WithFallbackLoads(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.errs.Invalid("fallback loads %d must not be negative", n)
		}
		c.fallbackLoads = n
	}
}

// WithMaxLoads caps the loader calls running at once in this process, across
// all keys (fills, early refreshes and fallback loads alike). Leases already
// make it one load per key; the cap is for many keys missing together, as
// after a Redis restart or a mass expiry: loads beyond it wait their turn
// (their leases kept alive) instead of piling onto the database. Set it near
// the database connections this process may use. 0 (the default) means no
// cap.
func WithMaxLoads(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.errs.Invalid("max loads %d must not be negative", n)
		}
		c.maxLoads = n
	}
}
