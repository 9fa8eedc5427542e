package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The breaker is bypassed while Redis is healthy; these pin that it still
// counts consecutive failures exactly, resets on a success in between, opens,
// and that errors saying nothing about Redis never count.
func TestBreakerCountsConsecutiveFailuresThroughFastPath(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[string](t, rdb, WithCircuitBreaker(3, time.Hour))
	down := errors.New("dial tcp: connection refused")
	call := func(outcome error) error {
		done, err := c.redis.Allow("k")
		if err != nil {
			return err
		}
		done(outcome)
		return nil
	}
	// Failures separated by successes never open it.
	for i := 0; i < 10; i++ {
		for _, e := range []error{down, down, nil, redis.Nil, replyError("ERR x")} {
			if err := call(e); err != nil {
				t.Fatalf("round %d: breaker opened on non-consecutive failures: %v", i, err)
			}
		}
	}
	// Cancellations and deadlines are not failures.
	for i := 0; i < 10; i++ {
		if err := call(context.Canceled); err != nil {
			t.Fatal(err)
		}
		if err := call(context.DeadlineExceeded); err != nil {
			t.Fatal(err)
		}
	}
	if c.redis.Suspect() {
		// Only the two failures before the last success were reported; the
		// successes after them made the breaker healthy again.
		t.Fatal("breaker still suspect after successes")
	}
	// Three in a row open it; the fourth call is refused.
	for i := 0; i < 3; i++ {
		if err := call(down); err != nil {
			t.Fatalf("failure %d refused: %v", i, err)
		}
	}
	if err := call(nil); !errors.Is(err, ErrCircuitOpen) || !errors.Is(err, ErrRedis) {
		t.Fatalf("after three failures: %v, want ErrCircuitOpen", err)
	}
}

// While the breaker is suspect every call goes through it; once a success
// closes it with no failure counted, calls take the fast path again.
func TestBreakerReturnsToFastPath(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[string](t, rdb, WithCircuitBreaker(2, time.Hour))
	done, err := c.redis.Allow("k")
	if err != nil {
		t.Fatal(err)
	}
	done(errors.New("i/o timeout"))
	if !c.redis.Suspect() {
		t.Fatal("a failure did not route calls through the breaker")
	}
	if n := c.redis.Counts().ConsecutiveFailures; n != 1 {
		t.Fatalf("breaker counted %d failures, want 1", n)
	}
	done, err = c.redis.Allow("k")
	if err != nil {
		t.Fatal(err)
	}
	done(nil)
	if c.redis.Suspect() {
		t.Fatal("still suspect after a success")
	}
	if n := c.redis.Counts().ConsecutiveFailures; n != 0 {
		t.Fatalf("breaker counts %d failures after a success", n)
	}
}

// replyError is an error reply from Redis: Redis answered.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")
