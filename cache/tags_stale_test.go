package cache

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// A local entry whose tag this instance invalidated is never served, not
// even as a stale answer while Redis fails once the tag's time is older
// than the local TTL: tag times only grow, so a time known to invalidate an
// entry does so for good.
func TestTagInvalidatedLocalEntryNotServedStale(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	ctx := context.Background()
	const localTTL = 200 * time.Millisecond
	c := newCacheWith(t, rdb, Values[string]{Tags: orgOf}, WithLocal(1<<20), WithLocalAdmitAll(), WithLocalTTL(localTTL),
		WithLocalStale(time.Minute))
	awaitSubscribed(t, c)
	row := "org1:v1"
	load := func(context.Context, string) (string, error) { return row, nil }
	waitFor(t, func() bool {
		c.Get(ctx, "k", load)
		fresh, e := c.tier.Get("k")
		return fresh && e != nil
	})
	if err := c.InvalidateTags(ctx, "org1"); err != nil {
		t.Fatal(err)
	}
	row = "org1:v2"
	// The tag's time, as this instance keeps it, outlives its local TTL.
	waitFor(t, func() bool {
		_, ok := c.tier.TagTime("org1", c.tier.Epoch(), time.Now().UnixNano())
		return !ok
	})
	on := new(atomic.Bool)
	rdb.AddHook(failGets{on: on})
	on.Store(true)
	v, err := c.Get(ctx, "k", load)
	if err == nil && v == "org1:v1" {
		t.Fatalf("Get = %q, nil (StaleServed %d): an entry of an invalidated tag served while Redis fails", v, c.Stats().StaleServed)
	}
	if !errors.Is(err, ErrRedis) {
		t.Errorf("Get = %q, %v; want ErrRedis", v, err)
	}
}
