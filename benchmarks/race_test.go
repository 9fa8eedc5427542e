package benchmarks

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The invalidation race: readers fill the cache from a slow database while a
// writer updates rows and invalidates them. A reader that loaded the old row
// before the update, and writes it to the cache after the invalidation, leaves
// a stale entry that every later reader gets until its TTL runs out.
const (
	raceRows     = 16
	raceReaders  = 8
	raceLatency  = 3 * time.Millisecond
	raceWriteGap = 2 * time.Millisecond
	raceDuration = time.Second
)

// BenchmarkInvalidationRace runs one second of reads and writes per op. A
// stale read is a read that started after the invalidation of version v had
// returned and still got a version older than v. stale-keys-left counts the
// rows whose cached value is still old once the writes have stopped (read
// twice, 100 ms apart, after a 200 ms pause: rockscache, by design, serves an
// invalidated value once while it refreshes it).
func BenchmarkInvalidationRace(b *testing.B) {
	d := raceDuration
	if quick() {
		d = 100 * time.Millisecond
	}
	for _, lib := range remoteLibraries() {
		b.Run("impl="+lib.name, func(b *testing.B) {
			var reads, stale, left float64
			for b.Loop() {
				r := raceCycle(b, lib, d)
				reads += float64(r.reads)
				stale += float64(r.stale)
				left += float64(r.left)
			}
			n := float64(b.N)
			b.ReportMetric(reads/n, "reads/op")
			b.ReportMetric(stale/n, "stale-reads/op")
			b.ReportMetric(left/n, "stale-keys-left/op")
		})
	}
}

type raceResult struct{ reads, stale, left int64 }

func raceCycle(b *testing.B, lib library, d time.Duration) raceResult {
	ctx := context.Background()
	db := newSimDB(raceRows, raceLatency, 64).withVersions()
	c := lib.open(b, remoteConfig(db, "race:"+lib.name+":"+nonce()+":"))
	defer c.close()
	names := keyNames()
	// committed[k] is the newest version whose invalidation has returned.
	var committed [raceRows]atomic.Int64
	var reads, stale atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range raceReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for time.Now().Before(stop) {
				k := r.IntN(raceRows)
				want := committed[k].Load()
				got, err := c.get(ctx, names[k])
				if err != nil {
					b.Error(err)
					return
				}
				reads.Add(1)
				if got.Version < want {
					stale.Add(1)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(99, 7))
		for time.Now().Before(stop) {
			k := r.IntN(raceRows)
			v := db.update(k)
			if err := c.del(ctx, names[k]); err != nil {
				b.Error(err)
				return
			}
			for {
				old := committed[k].Load()
				if v <= old || committed[k].CompareAndSwap(old, v) {
					break
				}
			}
			time.Sleep(raceWriteGap)
		}
	}()
	wg.Wait()
	// Let fills in flight land, then look twice.
	time.Sleep(200 * time.Millisecond)
	var left int64
	for pass := range 2 {
		for k := range raceRows {
			got, err := c.get(ctx, names[k])
			if err != nil {
				b.Error(err)
				continue
			}
			if pass == 1 && got.Version < db.versions[k].Load() {
				left++
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return raceResult{reads: reads.Load(), stale: stale.Load(), left: left}
}
