package cache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// fastFailClient gives up on a dead server quickly.
func fastFailClient(t *testing.T, addr string) *redis.Client { return redistest.FastFail(t, addr) }

func TestCircuitBreakerFailsFastThenRecovers(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := fastFailClient(t, srv.Addr)
	var cmds atomic.Int64
	rdb.AddHook(countHook{&cmds})
	ctx := context.Background()
	// The cooldown outlasts the 100 calls below on a loaded machine (at
	// 100 ms, a probe sometimes went out among them); a call is held to the
	// open breaker's rules only if it ended within the cooldown.
	const cooldown = 2 * time.Second
	c := newCache[string](t, rdb, WithCircuitBreaker(3, cooldown))
	load := func(context.Context, string) (string, error) { return "v", nil }
	srv.Kill()
	opened := time.Now() // no later than the breaker opens, below
	for i := 0; i < 3; i++ {
		if _, err := c.Get(ctx, "k", load); !errors.Is(err, ErrRedis) || errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	before := cmds.Load()
	for i := 0; i < 100; i++ {
		_, err := c.Get(ctx, "k", load)
		if !errors.Is(err, ErrRedis) || !errors.Is(err, ErrCircuitOpen) && time.Since(opened) < cooldown {
			t.Fatalf("open breaker: %v", err)
		}
	}
	if n := cmds.Load() - before; n != 0 && time.Since(opened) < cooldown {
		t.Fatalf("%d Redis calls with the breaker open", n)
	}
	srv.Restart()
	// After the cooldown one probe goes through and closes the breaker.
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := c.Get(ctx, "k", load)
		if err == nil && v == "v" {
			break
		}
		if !errors.Is(err, ErrCircuitOpen) || time.Now().After(deadline) {
			t.Fatalf("breaker did not close after Redis came back: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // waiting out the cooldown timer
	}
}

// With Redis down and WithFallbackLoads(2), at most two loads run at once;
// callers beyond the cap get the Redis error, not a database query.
func TestFallbackLoadsAreCapped(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := fastFailClient(t, srv.Addr)
	ctx := context.Background()
	c := newCache[string](t, rdb, WithFallbackLoads(2))
	srv.Kill()
	var running, loads atomic.Int64
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	load := func(_ context.Context, k string) (string, error) {
		loads.Add(1)
		if running.Add(1) > 2 {
			t.Error("more than two fallback loads at once")
		}
		defer running.Add(-1)
		entered <- struct{}{}
		<-release
		return "v:" + k, nil
	}
	results := make(chan error, 2)
	for _, k := range []string{"a", "b"} {
		go func() {
			v, err := c.Get(ctx, k, load)
			if err == nil && v != "v:"+k {
				err = errors.New("wrong value " + v)
			}
			results <- err
		}()
	}
	<-entered
	<-entered
	if _, err := c.Get(ctx, "c", load); !errors.Is(err, ErrRedis) {
		t.Fatalf("over the cap: %v", err)
	}
	close(release)
	for i := 0; i < 2; i++ {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	st := c.Stats()
	if loads.Load() != 2 || st.FallbackLoads != 2 || st.FallbackRejected != 1 {
		t.Fatalf("loads %d, stats %+v", loads.Load(), st)
	}
}

// Many keys missing at once: at most n loads run together; the rest wait for a
// slot instead of reaching the database.
func TestMaxLoadsCapsConcurrentLoads(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	waiting := make(chan struct{}, 10)
	c := newCache[string](t, rdb, WithMaxLoads(3), withHooks(&hooks{OnLoadWait: func() { waiting <- struct{}{} }}))
	var running, peak atomic.Int64
	entered := make(chan struct{}, 10)
	release := make(chan struct{})
	load := func(_ context.Context, k string) (string, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		entered <- struct{}{}
		<-release
		running.Add(-1)
		return "v" + k, nil
	}
	done := make(chan error, 10)
	for i := 0; i < 10; i++ {
		go func() {
			_, err := c.Get(ctx, fmt.Sprint("k", i), load)
			done <- err
		}()
	}
	// Every caller is now either loading or queued for a slot.
	for i := 0; i < 3; i++ {
		<-entered
	}
	for i := 0; i < 7; i++ {
		<-waiting
	}
	if n := running.Load(); n != 3 {
		t.Fatalf("%d loads running under a cap of three", n)
	}
	close(release)
	for i := 0; i < 10; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if peak.Load() != 3 || c.Stats().Loads != 10 {
		t.Fatalf("peak %d, loads %d", peak.Load(), c.Stats().Loads)
	}
}
