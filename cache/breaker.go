package cache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

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

// ErrCircuitOpen is wrapped (together with ErrRedis) in errors returned while
// the circuit breaker keeps calls away from Redis.
var ErrCircuitOpen = errors.New("cacheguard: cache: redis circuit open")

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

func newBreaker(prefix string, failures int, cooldown time.Duration, onChange func(from, to gobreaker.State)) *gobreaker.TwoStepCircuitBreaker[struct{}] {
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "cacheguard:" + prefix,
		MaxRequests: 1,
		Timeout:     cooldown,
		ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= uint32(failures) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			onChange(from, to)
		},
		IsSuccessful: redisAnswered,
		IsExcluded:   callerGaveUp,
	})
}

// redisAnswered reports whether a call's outcome shows Redis up: a reply from
// Redis, even an error reply, does.
func redisAnswered(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return true
	}
	var reply redis.Error
	return errors.As(err, &reply)
}

// callerGaveUp reports whether a call ended because its caller gave up or its
// deadline passed, which says nothing about Redis (with ContextTimeoutEnabled
// a tight deadline surfaces as an error here).
func callerGaveUp(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// noop is the outcome callback when there is no breaker.
func noop(error) {}

// The breaker (gobreaker) takes its mutex twice per call and reads the clock;
// on a healthy Redis every call would queue on that one lock. While nothing
// has failed, the breaker has nothing to decide: it is closed and counts no
// failure. So a call goes past it on one atomic load, and only a failure is
// reported to it; from that failure until the breaker is closed again with no
// failure counted, every call goes through it, so that successes reset its
// count and it opens, probes and closes as configured.
//
// breakerGate holds that state, one per Cache (its gate field).
type breakerGate struct {
	// state: bit 0 is set while calls go through the breaker; the rest
	// counts failures reported to it, so that a caller who saw the breaker
	// healthy clears bit 0 only if no failure was reported since it looked.
	state atomic.Uint64
	// fast is the Cache's fastOutcome, bound once: a method value made on
	// every call would allocate.
	fast atomic.Pointer[func(error)]
}

const breakerSuspect = 1

// allow asks the breaker for a Redis call; done must be called with the
// call's error.
func (c *Cache[V]) allow(key string) (done func(error), err error) {
	if c.breaker == nil {
		return noop, nil
	}
	if c.gate.state.Load()&breakerSuspect == 0 {
		if f := c.gate.fast.Load(); f != nil {
			return *f, nil
		}
		f := c.fastOutcome
		c.gate.fast.CompareAndSwap(nil, &f)
		return f, nil
	}
	brDone, err := c.breaker.Allow()
	if err != nil {
		c.stats.breakerRejects.Add(1) // no call was made: not a Redis error
		return nil, &circuitOpenError{key: key, err: err}
	}
	return func(err error) {
		seen := c.gate.state.Load()
		brDone(err)
		if !redisAnswered(err) {
			if !callerGaveUp(err) {
				c.markSuspect()
			}
			return
		}
		// Healthy again once closed with no failure counted, and no failure
		// reported by anyone since seen was read.
		if c.breaker.State() == gobreaker.StateClosed && c.breaker.Counts().ConsecutiveFailures == 0 {
			c.gate.state.CompareAndSwap(seen, seen&^breakerSuspect)
		}
	}, nil
}

// fastOutcome is the outcome callback of a call let past a healthy breaker:
// a success changes nothing; a failure is reported to the breaker, and from
// then on calls go through it.
func (c *Cache[V]) fastOutcome(err error) {
	if redisAnswered(err) || callerGaveUp(err) {
		return
	}
	c.markSuspect()
	if done, err2 := c.breaker.Allow(); err2 == nil {
		done(err)
	}
	c.markSuspect()
}

// markSuspect sends calls through the breaker and records one more reported
// failure, so that no caller who looked before it clears the state.
func (c *Cache[V]) markSuspect() {
	for {
		old := c.gate.state.Load()
		if c.gate.state.CompareAndSwap(old, (old+2)|breakerSuspect) {
			return
		}
	}
}

// circuitOpenError is the error of a call the breaker kept away from Redis.
// It matches both ErrRedis and ErrCircuitOpen, and says so once.
type circuitOpenError struct {
	key string
	err error // gobreaker's reason
}

func (e *circuitOpenError) Error() string {
	return fmt.Sprintf("cacheguard: cache: redis circuit open, %q not sent: %v", e.key, e.err)
}

func (e *circuitOpenError) Unwrap() []error { return []error{ErrRedis, ErrCircuitOpen, e.err} }
