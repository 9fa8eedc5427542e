package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/redis/go-redis/v9"
)

// A TTL option under the 1 ms floor is refused by New: Redis counts expiries
// in whole milliseconds and refuses PX 0, so every write would fail.
func TestSubMillisecondTTLOptionRefused(t *testing.T) {
	_, rdb := newSingle(t)
	for name, opts := range map[string][]Option{
		"TTL 500µs":      {WithTTL(500 * time.Microsecond), WithJitter(0)},
		"TTL 1ns":        {WithTTL(1)},
		"null TTL 999µs": {WithNullTTL(999 * time.Microsecond), WithJitter(0)},
	} {
		c, err := New(rdb, Values[string]{}, append([]Option{WithPrefix(prefixFor(t))}, opts...)...)
		if err == nil {
			serr := c.Set(context.Background(), "k", "v")
			c.Close()
			t.Fatalf("%s accepted (a Set then returned %v); want an error wrapping ErrInvalidOption", name, serr)
		}
		if !errors.Is(err, ErrInvalidOption) {
			t.Fatalf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	c, err := New(rdb, Values[string]{}, WithPrefix(prefixFor(t)), WithTTL(time.Millisecond), WithNullTTL(time.Millisecond), WithJitter(0))
	if err != nil {
		t.Fatalf("the floor itself: %v", err)
	}
	c.Close()
}

// A TTL func answering under a millisecond, jitter 0, is rounded up to the
// floor on every write that reaches Redis: Set, the fills of Get and
// GetMany, SetVersioned and a refresh all succeed, and nothing counts a
// Redis error.
func TestTTLFuncUnderAMillisecondRoundedUp(t *testing.T) {
	short := map[string]time.Duration{
		"1ns": 1, "1µs": time.Microsecond, "500µs": 500 * time.Microsecond, "999µs": 999 * time.Microsecond,
	}
	ttlOf := func(_ string, v string) time.Duration {
		if d, ok := short[v]; ok {
			return d
		}
		return time.Hour
	}
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rep := &reported{errs: map[string]error{}}
		// The soft timeout makes the Get that finds a stale entry wait
		// for its refresh (which ends at once, landed or not) and return
		// what it installed; it is never reached.
		c := newCacheWith(t, rdb, Values[string]{TTL: ttlOf}, runPrefix(t), WithJitter(0),
			WithCircuitBreaker(1000, time.Minute), WithSoftLoadTimeout(time.Minute), WithLoadTimeout(2*time.Minute),
			WithErrorHandler(rep.handler))
		for v := range short {
			load := func(context.Context, string) (string, error) { return v, nil }
			if err := c.Set(ctx, "set:"+v, v); err != nil {
				t.Errorf("Set with a TTL of %s: %v", v, err)
			}
			if got, err := c.Get(ctx, "get:"+v, load); err != nil || got != v {
				t.Errorf("Get = %q, %v", got, err)
			}
			if got, err := c.GetMany(ctx, []string{"many:" + v}, func(_ context.Context, keys []string) (map[string]string, error) {
				return map[string]string{keys[0]: v}, nil
			}); err != nil || got["many:"+v] != v {
				t.Errorf("GetMany = %v, %v", got, err)
			}
			if ok, err := c.SetVersioned(ctx, "ver:"+v, v, 1); err != nil || !ok {
				t.Errorf("SetVersioned with a TTL of %s = %v, %v", v, ok, err)
			}
			if err := c.Set(ctx, "ref:"+v, "hour"); err != nil {
				t.Fatal(err)
			}
			if err := c.MarkStale(ctx, time.Minute, "ref:"+v); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Get(ctx, "ref:"+v, load); err != nil || got != v {
				t.Errorf("Get of a stale entry refreshed with a TTL of %s = %q, %v; want the refreshed value", v, got, err)
			}
		}
		st := c.Stats()
		counts := c.redis.Counts()
		if st.RedisErrors != 0 || counts.TotalFailures != 0 || st.Breaker != BreakerClosed {
			t.Errorf("RedisErrors %d, breaker failures %d, breaker %v; want 0, 0, closed", st.RedisErrors, counts.TotalFailures, st.Breaker)
		}
		rep.mu.Lock()
		defer rep.mu.Unlock()
		for k, err := range rep.errs {
			t.Errorf("reported for %s: %v", k, err)
		}
	})
}

// The floor: whole milliseconds, never under one.
func TestRedisTTLFloor(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		1:                                1,
		999 * time.Microsecond:           1,
		time.Millisecond:                 1,
		1500 * time.Microsecond:          1,
		2 * time.Millisecond:             2,
		time.Minute:                      60000,
		-time.Second:                     1,
		2*entry.MaxTTL + time.Nanosecond: int64(2 * entry.MaxTTL / time.Millisecond),
	} {
		if got := entry.PX(d); got != want {
			t.Errorf("entry.PX(%v) = %d, want %d", d, got, want)
		}
		if got := entry.RedisTTL(d); got != time.Duration(want)*time.Millisecond {
			t.Errorf("entry.RedisTTL(%v) = %v, want %d ms", d, got, want)
		}
	}
}
