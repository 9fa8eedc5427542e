package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// copyFleet is three instances of one cache on a three-master cluster, each
// on its own client, every key hot, with n copies of each living ttl.
func copyFleet(t *testing.T, cl *redistest.Cluster, n int, ttl time.Duration, opts ...Option) []*Cache[string] {
	t.Helper()
	var fleet []*Cache[string]
	for range 3 {
		fleet = append(fleet, newCache[string](t, cl.Client(),
			append([]Option{WithHotKeys(allHot{}), WithHotKeyCopies(n, ttl)}, opts...)...))
	}
	return fleet
}

// getsPerMaster counts the GETs each master ran since the last reset.
func getsPerMaster(t *testing.T, cl *redistest.Cluster) []int64 {
	t.Helper()
	var out []int64
	for _, m := range cl.Masters {
		n, _, err := redistest.CommandStat(context.Background(), m.Client(), "get")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// A hot key read by 64 goroutines over three instances: with two copies
// its GETs spread over the three masters; without, one master runs them all.
func TestHotKeyCopiesSpreadReads(t *testing.T) {
	cl, _ := redistest.StartCluster(t)
	ctx := context.Background()
	load := func(context.Context, string) (string, error) { return "v", nil }
	for _, copies := range []bool{false, true} {
		t.Run(fmt.Sprintf("copies=%v", copies), func(t *testing.T) {
			var fleet []*Cache[string]
			if copies {
				fleet = copyFleet(t, cl, 2, 10*time.Second)
			} else {
				for range 3 {
					fleet = append(fleet, newCache[string](t, cl.Client()))
				}
			}
			if _, err := fleet[0].Get(ctx, "hot", load); err != nil {
				t.Fatal(err)
			}
			for _, m := range cl.Masters {
				m.Client().ConfigResetStat(ctx)
			}
			var wg sync.WaitGroup
			for g := range 64 {
				wg.Go(func() {
					for range 50 {
						if v, err := fleet[g%3].Get(ctx, "hot", load); err != nil || v != "v" {
							t.Errorf("Get: %q, %v", v, err)
							return
						}
					}
				})
			}
			wg.Wait()
			gets := getsPerMaster(t, cl)
			var total, busy int64
			for _, n := range gets {
				total += n
			}
			for _, n := range gets {
				if n*5 >= total { // at least a fifth of the reads
					busy++
				}
			}
			t.Logf("GETs per master: %v", gets)
			switch {
			case copies && busy < 2:
				t.Fatalf("with copies the GETs stayed on %d master(s): %v", busy, gets)
			case !copies && busy != 1:
				t.Fatalf("without copies the GETs went to %d masters: %v", busy, gets)
			}
			if copies {
				var reads uint64
				for _, c := range fleet {
					reads += c.Stats().CopyReads
				}
				if reads == 0 {
					t.Fatal("no read was answered by a copy")
				}
			}
		})
	}
}

// Every write through one instance deletes the copies before it returns:
// right after it, no instance reads the old value from any copy, and the
// copies are gone from Redis.
func TestHotKeyCopiesGoneAfterEveryWrite(t *testing.T) {
	cl, _ := redistest.StartCluster(t)
	ctx := context.Background()
	tags := Values[string]{Tags: func(string, string) []string { return []string{"t"} }}
	var fleet []*Cache[string]
	for range 3 {
		fleet = append(fleet, newCacheWith(t, cl.Client(), tags, WithHotKeys(allHot{}), WithHotKeyCopies(2, time.Minute)))
	}
	raw := cl.Client()
	present := func(keys []string) (n int64) { // one by one: the copies are on several slots
		for _, k := range keys {
			n += raw.Exists(ctx, k).Val()
		}
		return n
	}
	writes := []struct {
		name  string
		write func(c *Cache[string], key string) error
		want  string // what a read loads or finds after the write
	}{
		{"Delete", func(c *Cache[string], k string) error { return c.Delete(ctx, k) }, "new"},
		{"Set", func(c *Cache[string], k string) error { return c.Set(ctx, k, "set") }, "set"},
		{"SetVersioned", func(c *Cache[string], k string) error {
			_, err := c.SetVersioned(ctx, k, "versioned", uint64(time.Now().UnixNano()))
			return err
		}, "versioned"},
		{"MarkStale", func(c *Cache[string], k string) error {
			err := c.MarkStale(ctx, time.Millisecond, k)
			time.Sleep(2 * time.Millisecond) // past the stale bound: a read reloads
			return err
		}, "new"},
		{"DeleteKeepingVersion", func(c *Cache[string], k string) error {
			return c.DeleteKeepingVersion(ctx, time.Second, k)
		}, "new"},
		{"InvalidateTags", func(c *Cache[string], _ string) error { return c.InvalidateTags(ctx, "t") }, "new"},
		{"Clear", func(c *Cache[string], _ string) error { return c.Clear(ctx) }, "new"},
	}
	for i, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			key := fmt.Sprint("k", i)
			old := func(context.Context, string) (string, error) { return "old", nil }
			rkey := fleet[0].keys.Key(key)
			copies := fleet[0].eng.Copies.Keys(ctx, rkey)
			if len(copies) != 2 {
				t.Fatalf("copies of %q: %v, want 2", rkey, copies)
			}
			// Read until every copy holds the old value.
			for deadline := time.Now().Add(10 * time.Second); present(copies) != 2; {
				if time.Now().After(deadline) {
					t.Fatal("the copies were never written")
				}
				if _, err := fleet[i%3].Get(ctx, key, old); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.write(fleet[(i+1)%3], key); err != nil {
				t.Fatal(err)
			}
			if w.name != "Clear" && w.name != "InvalidateTags" {
				if n := present(copies); n != 0 {
					t.Fatalf("%d copies left after %s returned", n, w.name)
				}
			}
			fresh := func(context.Context, string) (string, error) { return "new", nil }
			for r := range 60 {
				in := r % 3
				if w.name == "Clear" || w.name == "InvalidateTags" {
					// The other instances switch within the health
					// bound (as they do without copies); the writer at
					// once, and the copies it reads follow.
					in = (i + 1) % 3
				}
				v, err := fleet[in].Get(ctx, key, fresh)
				if err != nil || v != w.want {
					t.Fatalf("read %d after %s on instance %d: %q, %v; want %q", r, w.name, in, v, err, w.want)
				}
			}
		})
	}
}

// refusedAtNew fails t unless New refuses opts (after WithPrefix("p:")) on
// rdb with ErrInvalidOption, and logs why.
func refusedAtNew(t *testing.T, rdb redis.UniversalClient, opts ...Option) {
	t.Helper()
	c, err := New[string](rdb, Values[string]{}, append([]Option{WithPrefix("p:")}, opts...)...)
	if !errors.Is(err, ErrInvalidOption) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("New: %v, want ErrInvalidOption", err)
	}
	t.Log(err)
}

// What WithHotKeyCopies cannot do is refused at New.
func TestHotKeyCopiesRefused(t *testing.T) {
	_, single := newSingle(t)
	cl, _ := redistest.StartCluster(t)
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		opts []Option
	}{
		{"one node", single, []Option{WithHotKeys(allHot{}), WithHotKeyCopies(2, time.Second)}},
		{"no detector", cl.Client(), []Option{WithHotKeyCopies(2, time.Second)}},
		{"no copies", cl.Client(), []Option{WithHotKeys(allHot{}), WithHotKeyCopies(0, time.Second)}},
		{"too many", cl.Client(), []Option{WithHotKeys(allHot{}), WithHotKeyCopies(maxCopies+1, time.Second)}},
		{"no TTL", cl.Client(), []Option{WithHotKeys(allHot{}), WithHotKeyCopies(2, 0)}},
		{"hash tag in prefix", cl.Client(), []Option{WithHotKeys(allHot{}), WithHotKeyCopies(2, time.Second), WithPrefix("{app}:")}},
	} {
		t.Run(tc.name, func(t *testing.T) { refusedAtNew(t, tc.rdb, tc.opts...) })
	}
}

// MarkStale's bound holds with copies: a stale entry is served while one
// caller reloads it, for at most maxStale, and no copy is made of it that
// would serve it longer.
func TestHotKeyCopiesKeepMarkStaleBound(t *testing.T) {
	cl, _ := redistest.StartCluster(t)
	fleet := copyFleet(t, cl, 2, time.Minute)
	ctx := context.Background()
	row := dbRowOf("old")
	seedCopies(t, fleet, cl.Client(), "k", row.load)
	row.Store("new")
	const maxStale = 300 * time.Millisecond
	marked := time.Now()
	if err := fleet[0].MarkStale(ctx, maxStale, "k"); err != nil {
		t.Fatal(err)
	}
	for i := 0; time.Since(marked) < 3*maxStale; i++ {
		start := time.Now()
		v, err := fleet[i%3].Get(ctx, "k", row.load)
		if err != nil {
			t.Fatal(err)
		}
		if v == "old" && start.Sub(marked) > maxStale {
			t.Fatalf("read %d, %v after MarkStale(%v), returned the stale value", i, start.Sub(marked), maxStale)
		}
	}
}
