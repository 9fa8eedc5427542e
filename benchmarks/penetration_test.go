package benchmarks

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Penetration: reads of rows that exist nowhere. The database answers in
// 1 ms through 32 connections.
const (
	absentPool       = 1000 // distinct absent ids in the absent=repeat runs
	penetrationConns = 32
)

// BenchmarkPenetration reads absent rows from 8 goroutines. absent=repeat
// draws from 1 000 absent ids, each read once before the timer starts, so a
// library that caches absences answers from Redis; absent=unique never reads
// the same id twice, so only a Bloom filter (cacheguard+bloom, 1 % false
// positives over the 100 000 rows) keeps the reads from the database.
// db-loads/op is the share of reads that reached the database.
func BenchmarkPenetration(b *testing.B) {
	ctx := context.Background()
	type variant struct {
		name string
		lib  library
		bf   bool
	}
	var variants []variant
	for _, lib := range remoteLibraries() {
		variants = append(variants, variant{lib.name, lib, false})
		if lib.name == "cacheguard" {
			variants = append(variants, variant{"cacheguard+bloom", lib, true})
		}
	}
	for _, mode := range []string{"repeat", "unique"} {
		for _, v := range variants {
			b.Run("absent="+mode+"/impl="+v.name, func(b *testing.B) {
				db := newSimDB(zipfKeys, time.Millisecond, penetrationConns)
				cfg := remoteConfig(db, "pen:"+v.name+":"+nonce()+":")
				cfg.bloom = v.bf
				c := v.lib.open(b, cfg)
				defer c.close()
				var next atomic.Int64
				absent := func() string {
					i := next.Add(1)
					if mode == "repeat" {
						i %= absentPool
					}
					return strconv.Itoa(zipfKeys + int(i))
				}
				if mode == "repeat" {
					parallel(16, absentPool, func(i int) { c.get(ctx, strconv.Itoa(zipfKeys+i)) })
				}
				var wrong atomic.Int64
				rts, loads := c.roundTrips(), db.queries.Load()
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := c.get(ctx, absent()); !errors.Is(err, errNoRow) {
							wrong.Add(1)
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(db.queries.Load()-loads)/float64(b.N), "db-loads/op")
				b.ReportMetric(float64(rts())/float64(b.N), "redis-roundtrips/op")
				if n := wrong.Load(); n > 0 {
					b.Fatalf("%d reads of absent rows did not answer not-found", n)
				}
			})
		}
	}
}
