package transport

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// When Redis is down, every call to it waits for a dial or read timeout
// before failing, and callers pile up behind those waits. A circuit breaker
// (sony/gobreaker) turns that into failing at once: after a run of
// consecutive Redis failures it opens and calls skip Redis for a cooldown,
// then one probe call is let through to see whether Redis is back.

// Breaker configures the circuit breaker; Failures 0 means none.
type Breaker struct {
	Name     string // gobreaker's name for it
	Failures int    // consecutive failures that open it
	Cooldown time.Duration
}

// breaker is the circuit breaker in front of Redis with its lock-free fast
// path (gate, below). A nil *breaker lets every call through.
type breaker struct {
	cb   *gobreaker.TwoStepCircuitBreaker[struct{}]
	gate breakerGate
	rec  *telemetry.Recorder
}

// newBreaker returns the breaker br describes (nil without one); its state
// changes are reported to rec.
func newBreaker(br Breaker, rec *telemetry.Recorder) *breaker {
	if br.Failures <= 0 {
		return nil
	}
	b := &breaker{rec: rec}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        br.Name,
		MaxRequests: 1,
		Timeout:     br.Cooldown,
		ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= uint32(br.Failures) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			rec.Report(telemetry.Breaker, "", fmt.Errorf("cacheguard: cache: redis circuit %s -> %s", from, to))
		},
		IsSuccessful: redisAnswered,
		IsExcluded:   callerGaveUp,
	})
	return b
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
// breakerGate holds that state, one per breaker.
type breakerGate struct {
	// state: bit 0 is set while calls go through the breaker; the rest
	// counts failures reported to it, so that a caller who saw the breaker
	// healthy clears bit 0 only if no failure was reported since it looked.
	state atomic.Uint64
	// fast is the breaker's fastOutcome, bound once: a method value made
	// on every call would allocate.
	fast atomic.Pointer[func(error)]
}

const breakerSuspect = 1

// allow asks the breaker for a Redis call about key; done must be called
// with the call's error. An open breaker refuses it with an error matching
// ErrRedis and ErrCircuitOpen.
func (r *breaker) allow(key string) (done func(error), err error) {
	if r == nil {
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
	brDone, err := r.cb.Allow()
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
		if r.cb.State() == gobreaker.StateClosed && r.cb.Counts().ConsecutiveFailures == 0 {
			r.gate.state.CompareAndSwap(seen, seen&^breakerSuspect)
		}
	}, nil
}

// fastOutcome is the outcome callback of a call let past a healthy breaker:
// a success changes nothing; a failure is reported to the breaker, and from
// then on calls go through it.
func (r *breaker) fastOutcome(err error) {
	if redisAnswered(err) || callerGaveUp(err) {
		return
	}
	r.markSuspect()
	if done, err2 := r.cb.Allow(); err2 == nil {
		done(err)
	}
	r.markSuspect()
}

// markSuspect sends calls through the breaker and records one more reported
// failure, so that no caller who looked before it clears the state.
func (r *breaker) markSuspect() {
	for {
		old := r.gate.state.Load()
		if r.gate.state.CompareAndSwap(old, (old+2)|breakerSuspect) {
			return
		}
	}
}

// suspect reports whether calls go through the breaker (a failure was
// reported since it was last healthy).
func (r *breaker) suspect() bool { return r != nil && r.gate.state.Load()&breakerSuspect != 0 }

// state is the breaker's state (closed without one); reading it also moves
// an open breaker whose cooldown has passed to half-open, as any call would.
func (r *breaker) state() gobreaker.State {
	if r == nil {
		return gobreaker.StateClosed
	}
	return r.cb.State()
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

// counts are the breaker's counts.
func (r *breaker) counts() gobreaker.Counts {
	if r == nil {
		return gobreaker.Counts{}
	}
	return r.cb.Counts()
}
