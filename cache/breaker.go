package cache

import "time"

// When Redis is down, every call to it waits for a dial or read timeout
// before failing, and callers pile up behind those waits. A circuit breaker
// (sony/gobreaker) turns that into failing at once: after a run of consecutive
// Redis failures it opens and calls skip Redis for a cooldown, then one probe
// call is let through to see whether Redis is back.
//
// What a Get does while Redis is unavailable (failing or breaker open), in
// order: serve the local tier's entry if within its stale bound; else, with
// WithFallbackLoads, call the loader directly under a cap on concurrent
// loads; else return an error wrapping ErrRedis. The database never sees more
// than the cap, however many callers there are.

// WithCircuitBreaker opens the breaker after failures consecutive Redis
// failures and keeps it open for cooldown before probing again.
func WithCircuitBreaker(failures int, cooldown time.Duration) Option {
	return func(c *config) {
		if failures < 1 || cooldown <= 0 {
			c.errs.Invalid("circuit breaker needs failures >= 1 and a positive cooldown, got %d, %v", failures, cooldown)
		}
		c.breakerFailures, c.breakerCooldown = failures, cooldown
	}
}
