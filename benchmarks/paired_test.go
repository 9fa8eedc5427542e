package benchmarks

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/dgraph-io/ristretto/v2"
)

// On a shared machine the speed of the CPU changes from one second to the
// next, so two benchmarks run one after the other can differ by more than
// what they measure. The paired benchmarks run the two contenders in
// alternating blocks within one loop, so that both see the same machine, and
// report each one's time per op and their ratio.

// pairedLoop alternates blocks of a and c and reports their ns/op and the
// ratio c/a under the given names. The order of the two blocks swaps on
// every iteration (a c, c a, a c, ...), so that neither always runs right
// after the other or right after the loop's own bookkeeping. The ratio is
// the median over iterations of c's block time over a's in the same
// iteration: a stretch of slow machine that falls on a few blocks moves the
// sums (the ns/op figures) but not that median.
func pairedLoop(b *testing.B, block int, a, c func(), aName, cName string) {
	var ta, tc time.Duration
	var ratios []float64
	n := 0
	timed := func(f func()) time.Duration {
		t0 := time.Now()
		for range block {
			f()
		}
		return time.Since(t0)
	}
	for i := 0; b.Loop(); i++ {
		var da, dc time.Duration
		if i%2 == 0 {
			da = timed(a)
			dc = timed(c)
		} else {
			dc = timed(c)
			da = timed(a)
		}
		ta, tc, n = ta+da, tc+dc, n+block
		if da > 0 {
			ratios = append(ratios, float64(dc)/float64(da))
		}
	}
	b.ReportMetric(float64(ta.Nanoseconds())/float64(n), aName+"-ns/op")
	b.ReportMetric(float64(tc.Nanoseconds())/float64(n), cName+"-ns/op")
	b.ReportMetric(median(ratios), "ratio")
}

// BenchmarkPaired runs cacheguard's hit paths against their baselines in
// alternation: the Redis hit against a go-redis GET plus json.Unmarshal, and
// the local hit against a raw ristretto Get.
func BenchmarkPaired(b *testing.B) {
	ctx := context.Background()
	key := hitKey
	db := newSimDB(zipfKeys, 0, 0)
	load := func(ctx context.Context, key string) (row, error) { return db.load(ctx, key) }

	b.Run("path=redis-hit/cacheguard-vs-go-redis-GET+json", func(b *testing.B) {
		rdb := newClient(b)
		raw, _ := json.Marshal(makeRow(42))
		rdb.Set(ctx, "paired:raw:"+key, raw, time.Hour)
		c, err := cache.New(rdb, cache.Values[row]{}, cache.WithPrefix("paired:cg:"), cache.WithTTL(time.Hour), cache.WithLogger(quietLog))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Get(ctx, key, load); err != nil {
			b.Fatal(err)
		}
		pairedLoop(b, 16, func() {
			data, err := rdb.Get(ctx, "paired:raw:"+key).Bytes()
			var r row
			if err == nil {
				err = json.Unmarshal(data, &r)
			}
			if err != nil {
				b.Fatal(err)
			}
		}, func() {
			if _, err := c.Get(ctx, key, load); err != nil {
				b.Fatal(err)
			}
		}, "raw", "cacheguard")
	})
	b.Run("path=local-hit/cacheguard-vs-ristretto", func(b *testing.B) {
		rc, err := ristretto.NewCache(&ristretto.Config[string, *row]{
			NumCounters: localBytes / 256 * 10, MaxCost: localBytes, BufferItems: 64, IgnoreInternalCost: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		defer rc.Close()
		r0 := makeRow(42)
		rc.Set(key, &r0, 200)
		rc.Wait()
		c, err := cache.New(newClient(b), cache.Values[row]{}, cache.WithPrefix("paired:local:"), cache.WithLocal(localBytes),
			cache.WithLocalAdmitAll(), cache.WithLocalTTL(localTTL), cache.WithLogger(quietLog))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		waitLocalTier(b, c)
		warmLocal(b, c, key, load)
		before := c.Stats().LocalHits
		pairedLoop(b, 256, func() {
			p, ok := rc.Get(key)
			if !ok {
				b.Fatal("miss")
			}
			r := *p
			_ = r
		}, func() {
			if _, err := c.Get(ctx, key, load); err != nil {
				b.Fatal(err)
			}
		}, "ristretto", "cacheguard")
		if c.Stats().LocalHits == before {
			b.Fatal("no local hits")
		}
	})
}
