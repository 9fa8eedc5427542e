package cache

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// outageClient is a client on rdb's servers with the settings the README
// recommends for outages (fail fast, context deadlines bound socket reads).
func outageClient(t *testing.T, rdb redis.UniversalClient) redis.UniversalClient {
	return redistest.FromSpec(t, redistest.Spec(rdb), func(o *redis.UniversalOptions) {
		o.MaxRetries, o.DialerRetries, o.DialTimeout, o.ContextTimeoutEnabled = -1, 1, 200*time.Millisecond, true
	})
}

// pauseAll makes every master hold its clients' commands for d (CLIENT
// PAUSE): Redis is healthy, just slow for a moment.
func pauseAll(t *testing.T, rdb redis.UniversalClient, d time.Duration) {
	redistest.EachMaster(t, rdb, func(ctx context.Context, c *redis.Client) error {
		return c.Do(ctx, "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err()
	})
}

// A caller whose deadline runs out while Redis answers slowly and another
// process fills the key gets its context error: not a Redis error, not a
// fallback load, not a breaker failure. The loader runs once.
func TestCallerDeadlineIsNotARedisFailure(t *testing.T) {
	redistest.NeedServer(t) // CLIENT PAUSE
	onTopologies(t, func(t *testing.T, shared redis.UniversalClient) {
		ctx := context.Background()
		rdb := outageClient(t, shared)
		opts := []Option{WithPrefix(prefixFor(t)), WithCircuitBreaker(1, time.Minute), WithFallbackLoads(8), WithMaxLoads(32)}
		shared.Del(ctx, prefixFor(t)+"k") // a fresh key on every run
		filler := newCache[string](t, rdb, opts...)
		reader := newCache[string](t, rdb, opts...)
		var loads atomic.Int64
		loading, release := make(chan struct{}), make(chan struct{})
		load := func(context.Context, string) (string, error) {
			if loads.Add(1) == 1 {
				close(loading)
				<-release
			}
			return "v", nil
		}
		filled := make(chan error, 1)
		go func() { _, err := filler.Get(ctx, "k", load); filled <- err }()
		<-loading // the filler holds the lease and loads
		pauseAll(t, shared, 500*time.Millisecond)
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := reader.Get(dctx, "k", load)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrRedis) {
			t.Errorf("Get past its deadline = %v, want the context error", err)
		}
		if st := reader.Stats(); st.RedisErrors != 0 || st.FallbackLoads != 0 {
			t.Errorf("a caller's deadline counted as a Redis failure: %+v", st)
		}
		close(release)
		if err := <-filled; err != nil {
			t.Fatal(err)
		}
		// The breaker (one failure trips it) is still closed.
		if v, err := reader.Get(ctx, "k", load); err != nil || v != "v" {
			t.Errorf("Get after the pause = %q, %v", v, err)
		}
		if n := loads.Load(); n != 1 {
			t.Errorf("loader ran %d times, want 1", n)
		}
	})
}
