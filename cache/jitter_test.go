package cache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/redis/go-redis/v9"
)

// Keys filled at once get TTLs spread over [ttl·(1−f), ttl·(1+f)], not one
// instant, so they do not expire together.
func TestJitterSpreadsTTLs(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n, ttl, f = 400, 100 * time.Second, 0.2
		// A lease long enough that no fill is refused however slow the
		// machine: this test is about TTLs.
		c := newCache[string](t, rdb, WithTTL(ttl), WithJitter(f), WithFillLease(time.Minute))
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprint("j", i)
		}
		start := time.Now()
		if _, err := c.GetMany(ctx, keys, func(_ context.Context, ks []string) (map[string]string, error) {
			m := map[string]string{}
			for _, k := range ks {
				m[k] = "v"
			}
			return m, nil
		}); err != nil {
			t.Fatal(err)
		}
		lo, hi := time.Duration(float64(ttl)*(1-f)), time.Duration(float64(ttl)*(1+f))
		var buckets [4]int
		for _, k := range keys {
			pttl := rdb.PTTL(ctx, prefixFor(t)+k).Val()
			// TTLs run down while the keys are read back (slowly on
			// miniredis under -race): allow for the time spent.
			if pttl < lo-time.Second-time.Since(start) || pttl > hi {
				t.Fatalf("PTTL %v outside [%v, %v]", pttl, lo, hi)
			}
			b := int(float64(pttl-lo) / float64(hi-lo) * 4)
			buckets[min(max(b, 0), 3)]++
		}
		// Uniform: each quarter of the window holds about n/4 keys.
		for i, b := range buckets {
			if b < n/8 {
				t.Fatalf("quarter %d of the window holds %d of %d keys: %v", i, b, n, buckets)
			}
		}
		t.Logf("TTL spread over quarters of [%v, %v]: %v", lo, hi, buckets)
	})
}

func TestNoJitterMeansExactTTL(t *testing.T) {
	for i := 0; i < 100; i++ {
		if d := entry.Jittered(time.Minute, 0); d != time.Minute {
			t.Fatalf("entry.Jittered(1m, 0) = %v", d)
		}
		if d := entry.Jittered(time.Minute, 0.5); d < 30*time.Second || d > 90*time.Second {
			t.Fatalf("entry.Jittered(1m, 0.5) = %v", d)
		}
	}
}
