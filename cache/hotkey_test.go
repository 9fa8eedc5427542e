package cache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/hotkey"
)

// With the real detector: a key that takes most of the traffic is promoted by
// the read that brings its count to the threshold, without waiting for a
// tick, and then served from memory; a cold one never is.
func TestHotKeyPromotionWithDetector(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	det, err := hotkey.New(hotkey.WithClock(func() time.Time { return now }),
		hotkey.WithWindow(time.Second), hotkey.WithTick(100*time.Millisecond), hotkey.WithMinCount(50))
	if err != nil {
		t.Fatal(err)
	}
	defer det.Close()
	c := newCache[string](t, rdb, WithLocal(1<<20), WithHotKeys(det))
	<-c.bus.Subscribed()
	load := func(_ context.Context, k string) (string, error) { return "v:" + k, nil }
	for i := 0; i < 49; i++ {
		c.Get(ctx, "hot", load)
		if i%20 == 0 {
			c.Get(ctx, fmt.Sprint("cold", i), load)
		}
	}
	if c.Stats().LocalHits != 0 || det.IsHot("hot") {
		t.Fatalf("under the threshold: %d local hits, hot %v", c.Stats().LocalHits, det.IsHot("hot"))
	}
	c.Get(ctx, "hot", load) // the 50th read: promoted, and its value admitted
	if !det.IsHot("hot") || det.IsHot("cold0") {
		t.Fatalf("detector: hot=%v cold=%v", det.IsHot("hot"), det.IsHot("cold0"))
	}
	c.Get(ctx, "cold0", load)
	for i := 0; i < 10; i++ {
		c.Get(ctx, "hot", load)
	}
	if n := c.Stats().LocalHits; n != 10 {
		t.Fatalf("local hits %d, want 10", n)
	}
	if _, ok := c.tier.Store().Get("cold0"); ok {
		t.Fatal("cold key promoted")
	}
	// The next tick keeps it.
	now = now.Add(100 * time.Millisecond)
	det.Tick()
	if !det.IsHot("hot") {
		t.Fatal("the tick demoted a key over the threshold")
	}
}
