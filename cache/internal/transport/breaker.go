package transport

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// When Redis is down, every call to it waits for a dial or read timeout
// before failing, and callers pile up behind those waits. A circuit breaker
// (sony/gobreaker) turns that into failing at once: after a run of
// consecutive Redis failures it opens and calls skip Redis for a cooldown,
// then one probe call is let through to see whether Redis is back.

func newBreaker(br Breaker, onChange func(from, to gobreaker.State)) *gobreaker.TwoStepCircuitBreaker[struct{}] {
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        br.Name,
		MaxRequests: 1,
		Timeout:     br.Cooldown,
		ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= uint32(br.Failures) },
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
// breakerGate holds that state, one per transport (its gate field).
type breakerGate struct {
	// state: bit 0 is set while calls go through the breaker; the rest
	// counts failures reported to it, so that a caller who saw the breaker
	// healthy clears bit 0 only if no failure was reported since it looked.
	state atomic.Uint64
	// fast is the transport's fastOutcome, bound once: a method value made
	// on every call would allocate.
	fast atomic.Pointer[func(error)]
}

const breakerSuspect = 1

// Allow asks the breaker for a Redis call about key; done must be called
// with the call's error. An open breaker refuses it with an error matching
// ErrRedis and ErrCircuitOpen.
func (r *Redis) Allow(key string) (done func(error), err error) {
	if r.breaker == nil {
		return noop, nil
	}
	if r.gate.state.Load()&breakerSuspect == 0 {
		if f := r.gate.fast.Load(); f != nil {
			return *f, nil
		}
		f := r.fastOutcome
		r.gate.fast.CompareAndSwap(nil, &f)
		return f, nil
	}
	brDone, err := r.breaker.Allow()
	if err != nil {
		r.rec.BreakerRejects.Add(1) // no call was made: not a Redis error
		return nil, &circuitOpenError{key: key, err: err}
	}
	return func(err error) {
		seen := r.gate.state.Load()
		brDone(err)
		if !redisAnswered(err) {
			if !callerGaveUp(err) {
				r.markSuspect()
			}
			return
		}
		// Healthy again once closed with no failure counted, and no failure
		// reported by anyone since seen was read.
		if r.breaker.State() == gobreaker.StateClosed && r.breaker.Counts().ConsecutiveFailures == 0 {
			r.gate.state.CompareAndSwap(seen, seen&^breakerSuspect)
		}
	}, nil
}

// fastOutcome is the outcome callback of a call let past a healthy breaker:
// a success changes nothing; a failure is reported to the breaker, and from
// then on calls go through it.
func (r *Redis) fastOutcome(err error) {
	if redisAnswered(err) || callerGaveUp(err) {
		return
	}
	r.markSuspect()
	if done, err2 := r.breaker.Allow(); err2 == nil {
		done(err)
	}
	r.markSuspect()
}

// markSuspect sends calls through the breaker and records one more reported
// failure, so that no caller who looked before it clears the state.
func (r *Redis) markSuspect() {
	for {
		old := r.gate.state.Load()
		if r.gate.state.CompareAndSwap(old, (old+2)|breakerSuspect) {
			return
		}
	}
}

// Suspect reports whether calls go through the breaker (a failure was
// reported since it was last healthy).
func (r *Redis) Suspect() bool { return r.gate.state.Load()&breakerSuspect != 0 }

// BreakerState is the breaker's state (closed without one); reading it
// also moves an open breaker whose cooldown has passed to half-open, as
// any call would.
func (r *Redis) BreakerState() gobreaker.State {
	if r.breaker == nil {
		return gobreaker.StateClosed
	}
	return r.breaker.State()
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

func (e *circuitOpenError) Unwrap() []error {
	return []error{errs.ErrRedis, errs.ErrCircuitOpen, e.err}
}

// Counts are the breaker's counts (tests).
func (r *Redis) Counts() gobreaker.Counts { return r.breaker.Counts() }
