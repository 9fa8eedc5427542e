package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// One InvalidateTags of a hot key costs one load across the fleet: the
// reader that finds the entry invalid has read the tag's time, so the entry
// its lease-guarded reload fills is valid for that invalidation whatever
// the clock margin, and every other reader (here and on the other
// instances) takes it.
func TestInvalidateTagsOfHotKeyCostsOneLoad(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	t.Run("redis", func(t *testing.T) { hotKeyReloads(t, rdb) })
	// The local tier checks its entries by the same rule.
	t.Run("local tier", func(t *testing.T) { hotKeyReloads(t, rdb, WithLocal(1<<20), WithLocalAdmitAll()) })
}

func hotKeyReloads(t *testing.T, rdb redis.UniversalClient, opts ...Option) {
	ctx := context.Background()
	var loads atomic.Int64
	load := func(context.Context, string) (string, error) {
		loads.Add(1)
		time.Sleep(2 * time.Millisecond) // a database's round trip
		return "org/1:hot", nil
	}
	caches := make([]*Cache[string], 3)
	for i := range caches {
		caches[i] = newCacheWith(t, ownClient(t, rdb), Values[string]{Tags: orgOf}, opts...)
	}
	if _, err := caches[0].Get(ctx, "hot", load); err != nil {
		t.Fatal(err)
	}
	var after atomic.Bool      // set once InvalidateTags returned
	var getsAfter atomic.Int64 // Gets started after it
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range caches {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					counted := after.Load()
					if v, err := c.Get(ctx, "hot", load); err != nil || v != "org/1:hot" {
						t.Errorf("Get = %q, %v", v, err)
						return
					}
					if counted {
						getsAfter.Add(1)
					}
				}
			}()
		}
	}
	before := loads.Load()
	if err := caches[1].InvalidateTags(ctx, "org:1"); err != nil {
		t.Fatal(err)
	}
	after.Store(true)
	// Past the clock margin (100 ms) by far, and enough Gets that each
	// reader came back several times.
	end := time.Now().Add(300 * time.Millisecond)
	waitFor(t, func() bool { return time.Now().After(end) && getsAfter.Load() >= 60 })
	close(stop)
	wg.Wait()
	if n := loads.Load() - before; n != 1 {
		t.Fatalf("%d loads after one InvalidateTags of a hot key (%d Gets after it), want 1", n, getsAfter.Load())
	}
}

// Two invalidations of a tag in one millisecond: a load that read the first
// one's time and started before the second lands invalid, since every
// invalidation makes the tag's time grow.
func TestSecondInvalidationInOneMillisecondInvalidatesReload(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCacheWith(t, rdb, Values[string]{Tags: orgOf})
		other := newCacheWith(t, rdb, Values[string]{Tags: orgOf})
		frozen := time.Now()
		c.hooks().Now = func() time.Time { return frozen }
		var l versionedLoader
		if v, err := c.Get(ctx, "1-k", l.load); err != nil || v != "org/1:1-k:v1" {
			t.Fatalf("first Get = %q, %v", v, err)
		}
		if err := c.InvalidateTags(ctx, "org:1"); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		c.hooks().AfterLoad = func(string) {
			once.Do(func() {
				if err := c.InvalidateTags(ctx, "org:1"); err != nil {
					t.Error(err)
				}
			})
		}
		// The reload reads the first invalidation's time; the second is
		// made, in the same millisecond, while it loads.
		if v, err := c.Get(ctx, "1-k", l.load); err != nil || v != "org/1:1-k:v2" {
			t.Fatalf("Get after the first invalidation = %q, %v", v, err)
		}
		c.hooks().AfterLoad = nil
		if v, err := other.Get(ctx, "1-k", l.load); err != nil || v != "org/1:1-k:v3" {
			t.Fatalf("served %q, %v: a value loaded before the second invalidation", v, err)
		}
	})
}
