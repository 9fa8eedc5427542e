package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkReadTransport runs Get's Redis hit over one transport of its
// GETs at a time, side by side at each number of goroutines: the read
// queues of readbatch.go ("queues"; "queues-mget" sends a batch's GETs as
// one MGET), go-redis's AutoPipeliner ("autopipeline")
// and the connection pool, one plain GET per read ("pool"). Each reports
// reads/s and the p99 of its reads in µs; b.N is the rounds of 100 ms per
// transport.
func BenchmarkReadTransport(b *testing.B) {
	_, rdb := newSingleB(b)
	ctx := context.Background()
	const rows = 10_000
	prefix := fmt.Sprintf("rt%d:", time.Now().UnixNano())
	keys := make([]string, rows)
	for i := range keys {
		keys[i] = fmt.Sprintf("row:%d", i)
	}
	load := func(_ context.Context, k string) (string, error) {
		return `{"id":"` + k + `","name":"a row of the table"}`, nil
	}
	ap, err := rdb.(*redis.Client).AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	defer ap.Close()
	transports := []struct {
		name string
		h    hooks
	}{{"queues", hooks{}}, {"queues-mget", hooks{BatchReads: mgetReads}}, {"autopipeline", hooks{ReadVia: ap}}, {"pool", hooks{ReadVia: rdb}}}
	caches := make([]*Cache[string], len(transports))
	for i, tr := range transports {
		c, err := New(rdb, Values[string]{}, WithPrefix(prefix), withHooks(&tr.h))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		caches[i] = c
	}
	for _, k := range keys {
		if _, err := caches[0].Get(ctx, k, load); err != nil {
			b.Fatal(err)
		}
	}
	for _, g := range []int{1, 16, 64, 256, 1024} {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			ops, lat := make([]float64, len(transports)), make([][]time.Duration, len(transports))
			var elapsed time.Duration
			for b.Loop() {
				for i := range transports { // taking turns: each sees the same stretch of the machine
					n, l, d := readRound(caches[i], keys, load, g, 100*time.Millisecond)
					ops[i] += float64(n)
					lat[i] = append(lat[i], l...)
					if i == 0 {
						elapsed += d
					}
				}
			}
			for i, tr := range transports {
				slices.Sort(lat[i])
				b.ReportMetric(ops[i]/elapsed.Seconds(), tr.name+"-reads/s")
				b.ReportMetric(float64(lat[i][len(lat[i])*99/100].Microseconds()), tr.name+"-p99-µs")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// readRound runs g goroutines of Gets for d; it returns the reads, every
// 16th read's latency and the time it took.
func readRound(c *Cache[string], keys []string, load Loader[string], g int, d time.Duration) (int64, []time.Duration, time.Duration) {
	var n atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			var mine []time.Duration
			var i int64
			for ; time.Now().Before(stop); i++ {
				t := time.Now()
				if _, err := c.Get(context.Background(), keys[rand.IntN(len(keys))], load); err != nil {
					panic(err)
				}
				if i%16 == 0 {
					mine = append(mine, time.Since(t))
				}
			}
			n.Add(i)
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return n.Load(), lat, time.Since(start)
}

// mgetReads sends a batch's GETs as one MGET (the benchmark's node is a
// single server: every key is in its slot).
func mgetReads(ctx context.Context, pipe redis.Pipeliner, gets []redis.Cmder) func() {
	keys := make([]string, len(gets))
	for i, g := range gets {
		keys[i] = g.Args()[1].(string)
	}
	mget := pipe.MGet(ctx, keys...)
	return func() {
		vals, err := mget.Result()
		for i, g := range gets {
			cmd := g.(*redis.StringCmd)
			switch v := any(nil); {
			case err != nil:
				cmd.SetErr(err)
			case vals[i] == v:
				cmd.SetErr(redis.Nil)
			default:
				cmd.SetVal(vals[i].(string))
			}
		}
	}
}
