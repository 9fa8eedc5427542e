package cache

import "github.com/sony/gobreaker/v2"

// BreakerState is the state of the circuit breaker in front of Redis
// (WithCircuitBreaker), as Stats reports it.
type BreakerState uint8

const (
	BreakerClosed   BreakerState = iota // calls go to Redis
	BreakerHalfOpen                     // after the cooldown: a few trial calls go through
	BreakerOpen                         // calls are kept away from Redis
)

func (s BreakerState) String() string {
	switch s {
	case BreakerHalfOpen:
		return "half-open"
	case BreakerOpen:
		return "open"
	}
	return "closed"
}

// breakerState reads the breaker's state; the read also moves an open
// breaker whose cooldown has passed to half-open, as any call would.
func (c *Cache[V]) breakerState() BreakerState {
	switch c.redis.BreakerState() {
	case gobreaker.StateHalfOpen:
		return BreakerHalfOpen
	case gobreaker.StateOpen:
		return BreakerOpen
	}
	return BreakerClosed
}
