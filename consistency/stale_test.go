package consistency

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

// With ServeStale, Update's deletes mark the entry stale: readers keep
// getting the old row at once while exactly one reload runs, and the
// reload's value is served afterwards. Both deletes of the double delete do
// this.
func TestServeStaleKeepsServingWhileOneReloads(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		clk := newFakeClock()
		w := newDrainWatch()
		q := newQueue(t, rdb, withClock(clk), withHooks(hooks{afterDrain: w.hook}))
		users := register(t, q, "users", newCache[int](t, rdb), ServeStale(time.Minute))
		d := newDB()
		d.write("1", false, clk.Now(), 0)
		var loads atomic.Int64
		load := func(_ context.Context, key string) (int, error) {
			loads.Add(1)
			v, ok := d.primary(key)
			if !ok {
				return 0, cache.ErrNotFound
			}
			return v, nil
		}
		r := newCache[int](t, rdb)
		rkey := prefixFor(t) + "c:1"
		// read serves one Get; if the entry was stale, it waits until the
		// reload it started has landed (the entry gets a full TTL again).
		read := func() int {
			t.Helper()
			wasStale := rdb.PTTL(ctx, rkey).Val() <= time.Minute
			v, err := r.Get(ctx, "1", load)
			if err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); wasStale; {
				if rdb.PTTL(ctx, rkey).Val() > time.Minute {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("reload of the stale entry never landed")
				}
				time.Sleep(time.Millisecond) // waiting for a background fill, bounded
			}
			return v
		}
		if v := read(); v != 1 || loads.Load() != 1 {
			t.Fatalf("warm-up %d, %d loads", v, loads.Load())
		}
		if err := users.Update(ctx, []string{"1"}, func(context.Context) error {
			d.write("1", false, clk.Now(), 0)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if pttl := rdb.PTTL(ctx, prefixFor(t)+"c:1").Val(); pttl <= 0 || pttl > time.Minute {
			t.Fatalf("stale entry PTTL %v, want kept and capped at a minute", pttl)
		}
		if v := read(); v != 1 {
			t.Fatalf("read after Update = %d, want the stale 1 served at once", v)
		}
		if n := loads.Load(); n != 2 {
			t.Fatalf("%d loads, want exactly one reload", n)
		}
		if v := read(); v != 2 || loads.Load() != 2 {
			t.Fatalf("after the reload: %d with %d loads, want 2 from the cache", v, loads.Load())
		}
		// The second delete marks it stale again: one more reload.
		clk.Advance(defaultConfig().delay)
		w.waitSettled(t, 1)
		if v := read(); v != 2 || loads.Load() != 3 {
			t.Fatalf("after the second delete: %d with %d loads, want 2 and one reload", v, loads.Load())
		}
	})
}
