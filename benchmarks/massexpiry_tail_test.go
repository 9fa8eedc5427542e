package benchmarks

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
)

// TestMassExpiryTail takes cacheguard's mass-expiry cycle (as in
// BenchmarkMassExpiry) apart to say where its slowest reads come from: each
// read is classed by what it did (a Redis hit; a fill that ran the loader; a
// read that waited for a fill), the loader's own time (the database's queue
// and its 4 ms) is measured, and the lease waits and GC pauses of the cycle
// are counted. Nothing is asserted on the figures (they are timings):
//
//	go test -run TestMassExpiryTail -v .
func TestMassExpiryTail(t *testing.T) {
	measurement(t)
	ctx := context.Background()
	db := newSimDB(zipfKeys, 0, massConns)
	rdb, _ := countedClient(t)
	c, err := cache.New(rdb, cache.Values[row]{}, cache.WithPrefix("tail:"+nonce()+":"), cache.WithTTL(massTTL),
		cache.WithNullTTL(massTTL), cache.WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var loadTimes []time.Duration
	load := func(ctx context.Context, key string) (row, error) {
		start := time.Now()
		r, err := db.load(ctx, key)
		d := time.Since(start)
		mu.Lock()
		loadTimes = append(loadTimes, d)
		mu.Unlock()
		if errors.Is(err, errNoRow) {
			return r, cache.ErrNotFound
		}
		return r, err
	}
	names := keyNames()
	start := time.Now()
	parallel(32, massKeys, func(i int) { c.Get(ctx, names[i], load) })
	db.setLatency(massLatency)
	db.reset()
	mu.Lock()
	loadTimes = loadTimes[:0]
	mu.Unlock()
	before := c.Stats()
	var gcBefore debug.GCStats
	debug.ReadGCStats(&gcBefore)

	type read struct {
		d    time.Duration
		kind string
	}
	var reads []read
	var wg sync.WaitGroup
	r := rand.New(rand.NewPCG(1, 2))
	stop := start.Add(massWindow)
	for next := time.Now(); next.Before(stop); next = next.Add(time.Second / massRate) {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		key := names[r.IntN(massKeys)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			s0 := c.Stats()
			t0 := time.Now()
			_, err := c.Get(ctx, key, load)
			d := time.Since(t0)
			s1 := c.Stats()
			kind := "hit"
			switch {
			case err != nil:
				kind = "error"
			case s1.Hits > s0.Hits && s1.Misses == s0.Misses:
				kind = "hit"
			default:
				kind = "miss (fill or wait)" // counters are shared: approximate
			}
			mu.Lock()
			reads = append(reads, read{d, kind})
			mu.Unlock()
		}()
	}
	wg.Wait()
	after := c.Stats()
	var gcAfter debug.GCStats
	debug.ReadGCStats(&gcAfter)

	slices.SortFunc(reads, func(a, b read) int { return int(a.d - b.d) })
	p99 := reads[len(reads)*99/100].d
	tail := map[string]int{}
	for _, rd := range reads[len(reads)*99/100:] {
		tail[rd.kind]++
	}
	slices.Sort(loadTimes)
	pct := func(xs []time.Duration, p int) time.Duration {
		if len(xs) == 0 {
			return 0
		}
		return xs[len(xs)*p/100]
	}
	var gcMax time.Duration
	for i := 0; i < int(gcAfter.NumGC-gcBefore.NumGC) && i < len(gcAfter.Pause); i++ {
		gcMax = max(gcMax, gcAfter.Pause[i])
	}
	t.Logf("reads %d, p50 %v, p99 %v, max %v", len(reads), reads[len(reads)/2].d, p99, reads[len(reads)-1].d)
	t.Logf("slowest 1 %% by kind: %v", tail)
	t.Logf("loads %d: loader time (database queue + %v) p50 %v, p90 %v, p99 %v, max %v", len(loadTimes), massLatency,
		pct(loadTimes, 50), pct(loadTimes, 90), pct(loadTimes, 99), pct(loadTimes, 100*len(loadTimes)/max(1, len(loadTimes)+1)))
	t.Logf("misses %d, lease waits %d, wait timeouts %d, breaker rejects %d, early refreshes %d",
		after.Misses-before.Misses, after.LeaseWaits-before.LeaseWaits, after.WaitTimeouts-before.WaitTimeouts,
		after.BreakerRejects-before.BreakerRejects, after.EarlyRefresh-before.EarlyRefresh)
	t.Logf("GC: %d cycles, pause total %v, longest %v", gcAfter.NumGC-gcBefore.NumGC, gcAfter.PauseTotal-gcBefore.PauseTotal, gcMax)
}
