package cache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkMissBurst: g goroutines each Get keys nobody has read (a miss:
// GET, lease, load, fill), for 200 ms per iteration; misses/s is the rate
// of such Gets. The loader answers at once, so the figure is Redis's side
// of a stampede across many keys.
//
// BenchmarkSetBurst, BenchmarkDeleteBurst: g goroutines each Set (Delete)
// keys of their own; sets/s (deletes/s).
func BenchmarkMissBurst(b *testing.B) {
	burst(b, "misses/s", func(c *Cache[string], ctx context.Context, k string) error {
		_, err := c.Get(ctx, k, func(context.Context, string) (string, error) { return "row " + k, nil })
		return err
	})
}

func BenchmarkSetBurst(b *testing.B) {
	burst(b, "sets/s", func(c *Cache[string], ctx context.Context, k string) error {
		return c.Set(ctx, k, "row "+k)
	})
}

func BenchmarkDeleteBurst(b *testing.B) {
	burst(b, "deletes/s", func(c *Cache[string], ctx context.Context, k string) error {
		return c.Delete(ctx, k)
	})
}

func burst(b *testing.B, unit string, op func(c *Cache[string], ctx context.Context, k string) error) {
	_, rdb := newSingleB(b)
	c, err := New(rdb, Values[string]{}, WithPrefix(fmt.Sprintf("burst%d:", time.Now().UnixNano())))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var seq atomic.Int64
	for _, g := range []int{1, 64, 256} {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			var n atomic.Int64
			var elapsed time.Duration
			for b.Loop() {
				stop := time.Now().Add(200 * time.Millisecond)
				start := time.Now()
				var wg sync.WaitGroup
				for range g {
					wg.Go(func() {
						for time.Now().Before(stop) {
							if err := op(c, context.Background(), fmt.Sprint("k", seq.Add(1))); err != nil {
								panic(err)
							}
							n.Add(1)
						}
					})
				}
				wg.Wait()
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(n.Load())/elapsed.Seconds(), unit)
			b.ReportMetric(0, "ns/op")
		})
	}
}
