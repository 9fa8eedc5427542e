package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// One InvalidateTags of a hot key costs one load across the fleet: the
// reader that finds the entry invalid has read the tag's time, so the entry
// its lease-guarded reload fills is valid for that invalidation whatever
// the clock margin, and every other reader (here and on the other
// instances) takes it.
func TestInvalidateTagsOfHotKeyCostsOneLoad(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	ctx := context.Background()
	var loads atomic.Int64
	load := func(context.Context, string) (string, error) {
		loads.Add(1)
		time.Sleep(2 * time.Millisecond) // a database's round trip
		return "org/1:hot", nil
	}
	caches := make([]*Cache[string], 3)
	for i := range caches {
		caches[i] = newCache[string](t, ownClient(t, rdb), WithTags(orgOf))
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
