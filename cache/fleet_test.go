package cache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/hotkey"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// With the fleet view, a key read 200 times a second on each of 20
// instances (each its own client, cache and detector), under a per-instance
// threshold of 1,000 a second, is promoted everywhere and its reads that
// reach Redis drop by at least 90 %: a window after promotion against the
// first window.
func TestFleetPromotionCutsRedisReads(t *testing.T) {
	const (
		instances = 20
		tick      = 100 * time.Millisecond
		window    = time.Second
		perTick   = 20 // reads per instance per tick: 200/s
	)
	ctx := context.Background()
	var ns atomic.Int64
	ns.Store(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, ns.Load()) }
	type instance struct {
		det *hotkey.Detector
		c   *Cache[string]
	}
	var fleet []instance
	for range instances {
		rdb := redistest.SharedCluster(t)
		det, err := hotkey.New(hotkey.WithClock(now), hotkey.WithWindow(window), hotkey.WithTick(tick),
			hotkey.WithMinCount(1000), hotkey.WithFleet(rdb, prefixFor(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { det.Close() })
		c := newCache[string](t, rdb, WithLocal(1<<20), WithHotKeys(det), WithLocalTTL(time.Minute))
		<-c.bus.Subscribed()
		fleet = append(fleet, instance{det, c})
	}
	load := func(_ context.Context, k string) (string, error) { return "v:" + k, nil }
	redisReads := func() (n uint64) {
		for _, in := range fleet {
			st := in.c.Stats()
			n += st.Hits - st.LocalHits + st.Misses
		}
		return n
	}
	// runWindow reads for one window and returns the reads that reached
	// Redis, and the tick at which every instance held the key hot (0: not).
	allHotAt := 0
	ticks := 0
	runWindow := func() uint64 {
		before := redisReads()
		for range window / tick {
			for _, in := range fleet {
				for range perTick {
					if v, err := in.c.Get(ctx, "warm", load); err != nil || v != "v:warm" {
						t.Fatalf("Get: %q, %v", v, err)
					}
				}
			}
			ns.Add(int64(tick))
			ticks++
			hot := 0
			for _, in := range fleet {
				in.det.Tick()
				if in.det.IsHot("warm") {
					hot++
				}
			}
			if hot == instances && allHotAt == 0 {
				allHotAt = ticks
			}
		}
		return redisReads() - before
	}
	first := runWindow()
	runWindow()
	if allHotAt == 0 {
		t.Fatalf("not hot everywhere after two windows; stats of the first detector %+v", fleet[0].det.Stats())
	}
	after := runWindow()
	drop := 1 - float64(after)/float64(first)
	t.Logf("hot everywhere after %d ticks; Redis reads of the key: %d in the first window, %d in the third (%.1f %% fewer)",
		allHotAt, first, after, 100*drop)
	if first != instances*perTick*uint64(window/tick) {
		t.Fatalf("%d Redis reads in the first window, want every read (%d)", first, instances*perTick*int(window/tick))
	}
	if drop < 0.9 {
		t.Fatalf("Redis reads dropped by %.1f %%, want at least 90 %%", 100*drop)
	}
}
