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

// After MarkStale, readers get the old value at once and exactly one of them
// reloads; then the new value is served.
func TestMarkStaleServesOldWhileOneRefreshes(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a := newCache[string](t, rdb)
		b := newCache[string](t, rdb, WithPrefix(prefixFor(t)))
		a.Get(ctx, "k", func(context.Context, string) (string, error) { return "old", nil })
		if err := a.MarkStale(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		if pttl := rdb.PTTL(ctx, prefixFor(t)+"k").Val(); pttl > time.Minute {
			t.Fatalf("stale TTL %v not capped", pttl)
		}
		var loads atomic.Int64
		release := make(chan struct{})
		filled := make(chan bool, 2)
		a.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		b.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		load := func(context.Context, string) (string, error) {
			loads.Add(1)
			<-release
			return "new", nil
		}
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			c := a
			if i%2 == 1 {
				c = b
			}
			go func() {
				defer wg.Done()
				if v, err := c.Get(ctx, "k", load); err != nil || v != "old" {
					t.Errorf("stale read = %q, %v; want old at once", v, err)
				}
			}()
		}
		wg.Wait() // every reader returned while the reload is still blocked
		close(release)
		if !<-filled {
			t.Fatal("refresh refused")
		}
		if n := loads.Load(); n != 1 {
			t.Fatalf("%d reloads, want exactly 1", n)
		}
		if v, _ := a.Get(ctx, "k", load); v != "new" {
			t.Fatalf("after refresh got %q", v)
		}
	})
}

// MarkStale on a lease deletes it (an in-flight fill is refused); on a cached
// absence too (the row may exist now).
func TestMarkStaleOnLeaseAndNull(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[string](t, rdb)
	c.hooks().AfterLoad = func(key string) { c.MarkStale(ctx, time.Minute, key) }
	c.Get(ctx, "k", func(context.Context, string) (string, error) { return "loaded before the write", nil })
	c.hooks().AfterLoad = nil
	// The hook marks stale after every load, so every reload is refused
	// too, for one wait budget.
	if rdb.Exists(ctx, prefixFor(t)+"k").Val() != 0 || c.Stats().RejectedFills < 2 {
		t.Fatalf("fill landed after MarkStale (stats %+v)", c.Stats())
	}
	c.Get(ctx, "n", func(context.Context, string) (string, error) { return "", ErrNotFound })
	c.MarkStale(ctx, time.Minute, "n")
	if v, err := c.Get(ctx, "n", func(context.Context, string) (string, error) { return "now exists", nil }); err != nil || v != "now exists" {
		t.Fatalf("Get after MarkStale of an absence = %q, %v", v, err)
	}
	if err := c.MarkStale(ctx, 0, "k"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("zero maxStale: %v", err)
	}
}

// A refresh still finishing (its value landed, its goroutine not yet done)
// does not keep the entry from being refreshed again after a later
// MarkStale: that refresh was for an older generation of the entry.
func TestRefreshAfterMarkStaleWhileTheLastOneFinishes(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[int](t, rdb)
		var loads atomic.Int64
		load := func(context.Context, string) (int, error) { return int(loads.Add(1)), nil }
		if v, err := c.Get(ctx, "k", load); err != nil || v != 1 {
			t.Fatalf("warm-up: %d, %v", v, err)
		}
		landed := make(chan struct{})
		finish := make(chan struct{})
		refreshed := make(chan struct{}, 2)
		var fills atomic.Int32
		c.hooks().OnRefresh = func(string) { refreshed <- struct{}{} }
		c.hooks().OnFill = func(string, bool) {
			if fills.Add(1) == 1 {
				close(landed)
				<-finish // the first refresh stays unfinished
			}
		}
		defer close(finish)
		if err := c.MarkStale(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(ctx, "k", load); err != nil || v != 1 {
			t.Fatalf("stale read: %d, %v; want 1", v, err)
		}
		<-landed
		<-refreshed
		if err := c.MarkStale(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(ctx, "k", load); err != nil || v != 2 {
			t.Fatalf("read after the second MarkStale: %d, %v; want the refreshed 2, stale", v, err)
		}
		select {
		case <-refreshed:
		case <-time.After(5 * time.Second):
			t.Fatal("no refresh after the second MarkStale: the first, still finishing, kept it out")
		}
	})
}
