package benchmarks

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
)

// BenchmarkLocalStoreMemory reports the heap that a local store holding
// entries rows takes, per row, beyond the rows themselves: the default store
// (otter v2, through a cache's WithLocal) against the ristretto store
// (WithLocalRistretto), both sized for localBytes. Every row is admitted
// by a Get that loads it.
func BenchmarkLocalStoreMemory(b *testing.B) {
	for _, entries := range []int{1000, 10_000} {
		for _, v := range []struct {
			name  string
			store func() cache.Option
		}{
			{"otter", func() cache.Option { return cache.WithLocal(localBytes) }},
			{"ristretto", func() cache.Option { return cache.WithLocalRistretto(localBytes) }},
		} {
			b.Run(fmt.Sprintf("entries=%d/store=%s", entries, v.name), func(b *testing.B) {
				rdb := newClient(b)
				var perEntry float64
				for b.Loop() {
					before := heapInUse()
					c, err := cache.New(rdb, cache.Values[int]{}, v.store(), cache.WithLocalAdmitAll(), cache.WithLocalTTL(localTTL),
						cache.WithPrefix("storemem:"+v.name+":"), cache.WithLogger(quietLog))
					if err != nil {
						b.Fatal(err)
					}
					waitLocalTier(b, c)
					keys := make([]string, entries)
					for i := range keys {
						keys[i] = strconv.Itoa(i)
					}
					loadMany := func(_ context.Context, ks []string) (map[string]int, error) {
						out := make(map[string]int, len(ks))
						for _, k := range ks {
							out[k], _ = strconv.Atoi(k)
						}
						return out, nil
					}
					if _, err := c.GetMany(context.Background(), keys, loadMany); err != nil {
						b.Fatal(err)
					}
					time.Sleep(50 * time.Millisecond) // a ristretto store admits on its goroutine
					after := heapInUse()
					perEntry = float64(after-before) / float64(entries)
					runtime.KeepAlive(keys)
					c.Close()
				}
				b.ReportMetric(perEntry, "heap-B/entry")
			})
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
