package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	testSoft = 50 * time.Millisecond
	testHard = 5 * time.Second
	// softSlack is what a loaded machine may add to the soft timeout; the
	// bound asserted stays far below the hard timeout.
	softSlack = 400 * time.Millisecond
)

// lastInfo records the GetInfo of the last observed call.
type lastInfo struct {
	mu sync.Mutex
	gi GetInfo
}

func (o *lastInfo) StartGet(ctx context.Context, _ string, _ []string) (context.Context, func(GetInfo)) {
	return ctx, func(gi GetInfo) { o.mu.Lock(); o.gi = gi; o.mu.Unlock() }
}
func (o *lastInfo) StartLoad(ctx context.Context, _ []string) (context.Context, func(error)) {
	return ctx, func(error) {}
}
func (o *lastInfo) last() GetInfo { o.mu.Lock(); defer o.mu.Unlock(); return o.gi }

// blockingLoader returns v once release is closed (or its context ends).
func blockingLoader(v string, release <-chan struct{}) Loader[string] {
	return func(ctx context.Context, _ string) (string, error) {
		select {
		case <-release:
			return v, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// getStale runs a Get of "k" whose reload blocks until release, and fails
// unless it answered "old" after the soft timeout and well before the hard
// one.
func getStale(t *testing.T, c *Cache[string], release <-chan struct{}) {
	t.Helper()
	start := time.Now()
	v, err := c.Get(context.Background(), "k", blockingLoader("new", release))
	took := time.Since(start)
	if err != nil || v != "old" {
		t.Fatalf("Get = %q, %v; want the stale value", v, err)
	}
	if took < testSoft || took > testSoft+softSlack {
		t.Fatalf("stale value after %v; want the soft timeout %v (+5ms, up to %v on a loaded machine), hard timeout %v", took, testSoft, softSlack, testHard)
	}
	t.Logf("stale value after %v (soft timeout %v, within d+5ms: %v)", took, testSoft, took <= testSoft+5*time.Millisecond)
}

// A Get that finds a stale Redis entry (MarkStale) waits the soft timeout
// for its reload, returns the stale value, and the reload lands in the
// background: the next Get reads it without a load.
func TestSoftTimeoutServesStaleRedisEntry(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		obs := &lastInfo{}
		c := newCache[string](t, rdb, runPrefix(t), WithSoftLoadTimeout(testSoft), WithLoadTimeout(testHard), WithObserver(obs))
		if _, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "old", nil }); err != nil {
			t.Fatal(err)
		}
		if err := c.MarkStale(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		filled := make(chan bool, 1)
		c.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		release := make(chan struct{})
		getStale(t, c, release)
		if gi := obs.last(); !gi.SoftTimeout || gi.LoadTimeout {
			t.Fatalf("GetInfo %+v: want SoftTimeout", gi)
		}
		if n := c.Stats().SoftTimeouts; n != 1 {
			t.Fatalf("SoftTimeouts = %d", n)
		}
		close(release)
		if !<-filled {
			t.Fatal("the background reload was refused")
		}
		if v, err := c.Get(ctx, "k", never(t)); err != nil || v != "new" {
			t.Fatalf("after the reload: %q, %v", v, err)
		}
		// A reload faster than the soft timeout is waited for.
		c.MarkStale(ctx, time.Minute, "k")
		if v, _ := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "newer", nil }); v != "newer" {
			t.Fatalf("a quick reload answered %q", v)
		}
		<-filled
	})
}

// A Get whose local tier holds an expired entry within its stale bound, and
// whose Redis read misses, waits the soft timeout for the fill, returns the
// local entry, and the fill lands.
func TestSoftTimeoutServesStaleLocalEntry(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := localCache(t, rdb, runPrefix(t), WithSoftLoadTimeout(testSoft), WithLoadTimeout(testHard),
			WithLocalTTL(10*time.Millisecond), WithLocalStale(time.Minute))
		if _, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "old", nil }); err != nil {
			t.Fatal(err)
		}
		// The Redis entry expires (no invalidation): only the local tier
		// holds the old value, soon past its freshness.
		rdb.Del(ctx, c.keys.Key("k"))
		for {
			fresh, e := c.tier.Get("k")
			if e == nil {
				t.Fatal("no local entry")
			}
			if !fresh {
				break
			}
			time.Sleep(2 * time.Millisecond) // waiting out the local TTL
		}
		filled := make(chan bool, 1)
		c.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		release := make(chan struct{})
		getStale(t, c, release)
		close(release)
		if !<-filled {
			t.Fatal("the background fill was refused")
		}
		if v, err := c.Get(ctx, "k", never(t)); err != nil || v != "new" {
			t.Fatalf("after the fill: %q, %v", v, err)
		}
	})
}

// A write that lands while the background reload runs still refuses it.
func TestSoftTimeoutReloadRefusedByWrite(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[string](t, rdb, runPrefix(t), WithSoftLoadTimeout(testSoft), WithLoadTimeout(testHard))
	c.Set(ctx, "k", "old")
	c.MarkStale(ctx, time.Minute, "k")
	filled := make(chan bool, 1)
	c.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
	release := make(chan struct{})
	if v, _ := c.Get(ctx, "k", blockingLoader("loaded before the write", release)); v != "old" {
		t.Fatal(v)
	}
	if err := c.Set(ctx, "k", "written"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if <-filled {
		t.Fatal("the reload landed over a later write")
	}
	if v, _ := c.Get(ctx, "k", never(t)); v != "written" {
		t.Fatal(v)
	}
}

// The background reload is background work like any other: Close cancels it
// and waits for it, and returns without error.
func TestSoftTimeoutReloadEndsWithClose(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c, err := New(rdb, Values[string]{}, WithPrefix(prefixFor(t)), WithSoftLoadTimeout(testSoft), WithLoadTimeout(testHard))
	if err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "k", "old")
	c.MarkStale(ctx, time.Minute, "k")
	cancelled := make(chan struct{})
	v, _ := c.Get(ctx, "k", func(ctx context.Context, _ string) (string, error) {
		<-ctx.Done()
		close(cancelled)
		return "", ctx.Err()
	})
	if v != "old" {
		t.Fatal(v)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-cancelled: // Close waited for the load, which has returned
	default:
		t.Fatal("Close returned before the background reload ended")
	}
}

// The load timeout stays the hard limit, reported as such.
func TestLoadTimeoutReported(t *testing.T) {
	_, rdb := newSingle(t)
	obs := &lastInfo{}
	c := newCache[string](t, rdb, runPrefix(t), WithLoadTimeout(20*time.Millisecond), WithObserver(obs))
	_, err := c.Get(context.Background(), "k", blockingLoader("never", nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if gi := obs.last(); !gi.LoadTimeout || gi.SoftTimeout {
		t.Fatalf("GetInfo %+v: want LoadTimeout", gi)
	}
	if n := c.Stats().LoadTimeouts; n != 1 {
		t.Fatalf("LoadTimeouts = %d", n)
	}
}

func TestSoftLoadTimeoutBadInput(t *testing.T) {
	_, rdb := newSingle(t)
	for _, opts := range [][]Option{
		{WithSoftLoadTimeout(0)},
		{WithSoftLoadTimeout(-time.Second)},
		{WithSoftLoadTimeout(time.Second), WithLoadTimeout(time.Second)},
		{WithSoftLoadTimeout(11 * time.Second)}, // the default load timeout is 10 s
	} {
		if _, err := New(rdb, Values[string]{}, append(opts, WithPrefix("opt:"))...); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%d options: err %v, want ErrInvalidOption", len(opts), err)
		}
	}
}

// A reload that the TTL func maps to 0 is not to be cached: the Get that
// waited for it under the soft timeout returns it, and the stale entry goes
// (a versioned one leaves its version behind), so the next Get loads again
// instead of being served the stale value for the whole stale bound.
func TestSoftTimeoutReloadNotToBeCached(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		// A soft timeout never reached: the reload ends at once.
		c := newCacheWith(t, rdb, Values[string]{TTL: ttlByValue}, runPrefix(t),
			WithSoftLoadTimeout(time.Minute), WithLoadTimeout(2*time.Minute))
		var loads atomic.Int64
		zero := func(context.Context, string) (string, error) { loads.Add(1); return "zero", nil }
		if err := c.Set(ctx, "k", "hour"); err != nil {
			t.Fatal(err)
		}
		if ok, err := c.SetVersioned(ctx, "ver", "hour", 7); err != nil || !ok {
			t.Fatalf("SetVersioned = %v, %v", ok, err)
		}
		if err := c.MarkStale(ctx, time.Minute, "k", "ver"); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"k", "ver"} {
			if v, err := c.Get(ctx, k, zero); err != nil || v != "zero" {
				t.Fatalf("%s: the Get that waited for the reload = %q, %v; want the reloaded value", k, v, err)
			}
			if v, err := c.Get(ctx, k, zero); err != nil || v != "zero" {
				t.Fatalf("%s: the next Get = %q, %v; want a reload", k, v, err)
			}
		}
		if n := loads.Load(); n != 4 {
			t.Fatalf("%d loads, want 4 (nothing cached)", n)
		}
		if n := c.Stats().SoftTimeouts; n != 0 {
			t.Fatalf("SoftTimeouts = %d", n)
		}
		// The versioned entry's version stays: an older write is refused.
		if ok, _ := c.SetVersioned(ctx, "ver", "hour", 6); ok {
			t.Fatal("an older version landed after the reload removed the entry")
		}
		if ok, err := c.SetVersioned(ctx, "ver", "hour", 8); err != nil || !ok {
			t.Fatalf("a newer version: %v, %v", ok, err)
		}
	})
}
