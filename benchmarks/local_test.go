package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/hotkey"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/maypok86/otter/v2"
	"github.com/redis/go-redis/v9"
)

// localBytes is the local tier's size in the local-hit benchmarks; localTTL
// is long there so that the measured loop never leaves the local path.
const (
	localBytes = 16 << 20
	localTTL   = time.Minute
)

// BenchmarkLocalHit measures the local-hit path: the row is in process
// memory. Baselines are a raw ristretto v2 Get (configured as cacheguard
// configures it) and a raw otter v2 GetIfPresent of a *row. cacheguard runs
// with its default store, otter v2 (admitting every key, or only hot keys
// with a detector recording every Get), and with its ristretto store
// (WithLocalRistretto). The other libraries with a local tier keep encoded
// bytes there, so their local hit includes decoding.
func BenchmarkLocalHit(b *testing.B) {
	ctx := context.Background()
	const key = "42"
	db := newSimDB(zipfKeys, 0, 0)
	r0 := makeRow(42)

	b.Run("impl=ristretto", func(b *testing.B) {
		rc, err := ristretto.NewCache(&ristretto.Config[string, *row]{
			NumCounters: localBytes / 256 * 10, MaxCost: localBytes, BufferItems: 64, IgnoreInternalCost: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		defer rc.Close()
		rc.Set(key, &r0, 200)
		rc.Wait()
		b.ReportAllocs()
		for b.Loop() {
			p, ok := rc.Get(key)
			if !ok {
				b.Fatal("miss")
			}
			r := *p
			_ = r
		}
	})
	b.Run("impl=otter", func(b *testing.B) {
		oc := otter.Must(&otter.Options[string, *row]{MaximumSize: localBytes / 256})
		oc.Set(key, &r0)
		b.ReportAllocs()
		for b.Loop() {
			p, ok := oc.GetIfPresent(key)
			if !ok {
				b.Fatal("miss")
			}
			r := *p
			_ = r
		}
	})
	for _, v := range []struct {
		name string
		opts func(b *testing.B) []cache.Option
	}{
		{"cacheguard", func(*testing.B) []cache.Option {
			return []cache.Option{cache.WithLocal(localBytes), cache.WithLocalAdmitAll()}
		}},
		{"cacheguard+hotkeys", func(b *testing.B) []cache.Option {
			det, err := hotkey.New(hotkey.WithMinCount(1))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { det.Close() })
			return []cache.Option{cache.WithLocal(localBytes), cache.WithHotKeys(det)}
		}},
		{"cacheguard+ristretto", func(*testing.B) []cache.Option {
			return []cache.Option{cache.WithLocalRistretto(localBytes), cache.WithLocalAdmitAll()}
		}},
	} {
		b.Run("impl="+v.name, func(b *testing.B) {
			rdb, rt := countedClient(b)
			c, load := localHitCache(b, rdb, db, v.name, key, v.opts(b)...)
			b.ReportAllocs()
			before, rts := c.Stats().LocalHits, rt.load()
			for b.Loop() {
				if _, err := c.Get(ctx, key, load); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.Stats().LocalHits-before)/float64(b.N), "local-hits/op")
			b.ReportMetric(float64(rt.load()-rts)/float64(b.N), "redis-roundtrips/op")
		})
	}
	for _, lib := range libraries() {
		if !lib.local || lib.name == "cacheguard" {
			continue
		}
		b.Run("impl="+lib.name, func(b *testing.B) {
			cfg := remoteConfig(db, "local:"+lib.name+":")
			cfg.local, cfg.localEntries, cfg.localTTL = true, localBytes/256, localTTL
			c := lib.open(b, cfg)
			defer c.close()
			// Fill, then read until a Get makes no round trip: the value
			// is in the local tier (some fill it asynchronously).
			for deadline := time.Now().Add(5 * time.Second); ; {
				rts := c.roundTrips()
				if _, err := c.get(ctx, key); err != nil {
					b.Fatal(err)
				}
				if rts() == 0 {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal("never served from the local tier")
				}
				time.Sleep(time.Millisecond)
			}
			b.ReportAllocs()
			rts := c.roundTrips()
			for b.Loop() {
				if _, err := c.get(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rts())/float64(b.N), "redis-roundtrips/op")
		})
	}
	b.Run("impl=ristretto/parallel", func(b *testing.B) {
		rc, err := ristretto.NewCache(&ristretto.Config[string, *row]{
			NumCounters: localBytes / 256 * 10, MaxCost: localBytes, BufferItems: 64, IgnoreInternalCost: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		defer rc.Close()
		rc.Set(key, &r0, 200)
		rc.Wait()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if p, ok := rc.Get(key); ok {
					r := *p
					_ = r
				}
			}
		})
	})
	b.Run("impl=otter/parallel", func(b *testing.B) {
		oc := otter.Must(&otter.Options[string, *row]{MaximumSize: localBytes / 256})
		oc.Set(key, &r0)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if p, ok := oc.GetIfPresent(key); ok {
					r := *p
					_ = r
				}
			}
		})
	})
	for _, v := range []struct {
		name  string
		store func() cache.Option
	}{
		{"cacheguard", func() cache.Option { return cache.WithLocal(localBytes) }},
		{"cacheguard+ristretto", func() cache.Option { return cache.WithLocalRistretto(localBytes) }},
	} {
		name := v.name
		b.Run("impl="+name+"/parallel", func(b *testing.B) {
			rdb, _ := countedClient(b)
			c, load := localHitCache(b, rdb, db, name, key, v.store(), cache.WithLocalAdmitAll())
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Get(ctx, key, load); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// localHitCache returns a cache made with opts (a local tier among them),
// closed when b ends, that serves key from its local tier, and its loader.
func localHitCache(b *testing.B, rdb redis.UniversalClient, db *simDB, name, key string, opts ...cache.Option) (*cache.Cache[row], cache.Loader[row]) {
	opts = append(opts, cache.WithPrefix("local:"+name+":"), cache.WithLocalTTL(localTTL), cache.WithLogger(quietLog))
	c, err := cache.New(rdb, cache.Values[row]{}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	waitLocalTier(b, c)
	load := func(ctx context.Context, key string) (row, error) { return db.load(ctx, key) }
	warmLocal(b, c, key, load)
	return c, load
}

// warmLocal reads key until cacheguard serves it from the local tier
// (a ristretto store admits asynchronously; a hot-key detector promotes at
// its next tick).
func warmLocal(b *testing.B, c *cache.Cache[row], key string, load cache.Loader[row]) {
	ctx := context.Background()
	for deadline := time.Now().Add(5 * time.Second); ; {
		before := c.Stats().LocalHits
		if _, err := c.Get(ctx, key, load); err != nil {
			b.Fatal(err)
		}
		if c.Stats().LocalHits > before {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("never served from the local tier")
		}
		time.Sleep(time.Millisecond)
	}
}
