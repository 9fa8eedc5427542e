package cache

import (
	"context"
	"testing"
	"time"
)

// An idle local tier stops its coarse clock (no 1 ms ticker burning CPU
// while nothing is read), and the first read after the pause sees the
// current time: an entry that expired meanwhile is not served as fresh.
func TestIdleLocalTierStopsItsClock(t *testing.T) {
	rdb := sharedSingleFor(t)
	ctx := context.Background()
	c := newCache[string](t, rdb, WithLocal(1<<20), WithLocalAdmitAll(), WithLocalTTL(50*time.Millisecond), WithJitter(0))
	<-c.bus.Subscribed()
	load := func(context.Context, string) (string, error) { return "v", nil }
	if _, err := c.Get(ctx, "k", load); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.tier.Store().Get("k"); !ok {
		t.Fatal("not admitted")
	}
	waitFor(t, func() bool { return c.tier.ClockIdle() })
	before := c.Stats().LocalHits
	if v, err := c.Get(ctx, "k", load); err != nil || v != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if c.Stats().LocalHits != before {
		t.Error("an entry past its local TTL was served as fresh after the clock's pause")
	}
	if c.tier.ClockIdle() {
		t.Error("a read did not wake the clock")
	}
}
