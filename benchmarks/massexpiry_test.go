package benchmarks

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Mass expiry (avalanche): massKeys rows are filled at once with the same
// TTL, then read at random at a steady massRate reads per second (an open
// loop: a slow read does not slow the arrivals) until well past that TTL.
// Where the TTLs are not spread out the rows expire together, and their
// reloads reach the database in one burst. Each row is read every 100 ms on
// average. The database answers in 4 ms through 8 connections: 2 000
// queries/s at most.
const (
	massKeys    = 500
	massRate    = 5000 // reads per second
	massTTL     = 2 * time.Second
	massWindow  = 3400 * time.Millisecond // reading, from the start of the fill
	massBucket  = 100 * time.Millisecond
	massLatency = 4 * time.Millisecond
	massConns   = 8
)

// BenchmarkMassExpiry runs one fill-then-read cycle per library per op, the
// libraries taking turns (see interleaved); the figures are medians over the
// cycles. db-loads/op is the number of reloads after the fill (one per row is
// ideal), db-peak-qps the highest database rate over 100 ms, db-peak-queue
// the most queries waiting or running at once, p99-read-ms the readers' 99th
// percentile latency. TTLs: cacheguard spreads them by ±10 % (its default
// jitter), go-zero by ±5 % rounded up to whole seconds, rockscache subtracts
// up to 10 % and truncates to whole seconds; the others use the TTL as is.
// The fill reads every row once through the library, from 32 goroutines,
// with the database answering at once, so that it takes tens of
// milliseconds.
func BenchmarkMassExpiry(b *testing.B) {
	keys := scaled(massKeys, 100)
	window := massWindow
	if quick() {
		window = 300 * time.Millisecond
	}
	libs := remoteLibraries()
	names := make([]string, len(libs))
	for i, l := range libs {
		names[i] = l.name
	}
	interleaved(b, names, func(l int) roundMetrics {
		r := massExpiryCycle(b, libs[l], keys, window)
		return roundMetrics{
			"db-loads/op":   float64(r.loads),
			"db-peak-qps":   r.peakQPS,
			"db-peak-queue": float64(r.peakQueue),
			"p99-read-ms":   float64(r.p99) / float64(time.Millisecond),
		}
	})
}

type massResult struct {
	loads     int64
	peakQPS   float64
	peakQueue int64
	p99       time.Duration
}

// massExpiryCycle fills keys rows under a fresh prefix, then reads them for
// the rest of window.
func massExpiryCycle(b *testing.B, lib library, keys int, window time.Duration) massResult {
	ctx := context.Background()
	db := newSimDB(zipfKeys, 0, massConns)
	c := lib.open(b, implConfig{db: db, prefix: "mass:" + lib.name + ":" + nonce() + ":", ttl: massTTL, nullTTL: massTTL})
	defer c.close()
	names := keyNames()
	start := time.Now()
	parallel(32, keys, func(i int) { c.get(ctx, names[i]) })
	db.setLatency(massLatency)
	db.reset()
	tl := db.record(massBucket)

	stop := start.Add(window)
	interval := time.Second / massRate
	r := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	for next := time.Now(); next.Before(stop); next = next.Add(interval) {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		key := names[r.IntN(keys)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.Now()
			if _, err := c.get(ctx, key); err != nil {
				errs.Add(1)
			}
			d := time.Since(t)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if n := errs.Load(); n > 0 {
		b.Errorf("%d reads failed", n)
	}
	if testing.Verbose() {
		b.Logf("%s: database queries per %v: %v", lib.name, massBucket, tl.counts)
	}
	slices.Sort(lat)
	var p99 time.Duration
	if len(lat) > 0 {
		p99 = lat[len(lat)*99/100]
	}
	return massResult{loads: db.queries.Load(), peakQPS: tl.peakPerSecond(), peakQueue: db.peak.Load(), p99: p99}
}
