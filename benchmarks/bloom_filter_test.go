package benchmarks

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// bloomKeys is the number of rows the benchmark filters hold, at bloomFP.
const (
	bloomKeys = 1_000_000
	bloomFP   = 0.01
)

func bloomRows(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func bloomSource(keys []string) func(func(string, error) bool) {
	return func(yield func(string, error) bool) {
		for _, k := range keys {
			if !yield(k, nil) {
				return
			}
		}
	}
}

// serverCost resets Redis' command statistics and returns a function that
// reports the server-side time spent in cmd per operation (per key with
// perOp keys an operation), as measured by INFO commandstats: the part of a
// round trip that is Redis working, apart from the network and the client.
func serverCost(b *testing.B, rdb *redis.Client, cmd string, perOp int) func() {
	ctx := context.Background()
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return func() {
		_, usec, err := redistest.CommandStat(ctx, rdb, cmd)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(usec*1000/float64(b.N*perOp), "server-ns/key")
	}
}

// BenchmarkBloomMayContain prices a filter test against the Redis round trip
// it saves: a plain go-redis GET of an absent key (what a read for a
// non-existent row costs without a filter, before the database is even
// asked). The filters hold 1M keys at a 1% false-positive rate; the fleet
// filter tests its in-process copy of the Redis filter's bitmap. "absent"
// probes keys that exist nowhere (the penetration case, usually decided at the
// first unset bit); "present" probes existing keys (all k bits read).
func BenchmarkBloomMayContain(b *testing.B) {
	ctx := context.Background()
	rdb := newClient(b)
	rows := bloomRows("user:", bloomKeys)
	absent := bloomRows("nobody:", 1<<16)

	local, err := bloom.NewLocal(bloomKeys, bloomFP)
	if err != nil {
		b.Fatal(err)
	}
	if err := local.Rebuild(ctx, bloomSource(rows)); err != nil {
		b.Fatal(err)
	}
	shared, err := bloom.NewRedis(ctx, rdb, "bench:bloom:users", bloomKeys, bloomFP)
	if errors.Is(err, bloom.ErrMismatch) { // left over from another configuration
		rdb.Del(ctx, "{bench:bloom:users}:cfg", "{bench:bloom:users}:bits")
		shared, err = bloom.NewRedis(ctx, rdb, "bench:bloom:users", bloomKeys, bloomFP)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { shared.Drop(context.Background()) })
	if err := shared.Rebuild(ctx, bloomSource(rows)); err != nil {
		b.Fatal(err)
	}

	// The fleet filter reads the same bitmap into its in-process copy.
	fleet, err := bloom.NewFleet(ctx, rdb, "bench:bloom:users", bloomKeys, bloomFP)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fleet.Close() })
	if err := fleet.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}

	probe := func(f bloom.Filter, keys []string) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			if _, ok := f.(*bloom.Redis); ok {
				defer serverCost(b, rdb, "evalsha", 1)()
			}
			i := 0
			for b.Loop() {
				if _, err := f.MayContain(ctx, keys[i&(1<<16-1)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		}
	}
	parallel := func(f bloom.Filter, keys []string) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					f.MayContain(ctx, keys[i&(1<<16-1)])
					i++
				}
			})
		}
	}
	get := func(b *testing.B) {
		b.ReportAllocs()
		defer serverCost(b, rdb, "get", 1)()
		i := 0
		for b.Loop() {
			if err := rdb.Get(ctx, absent[i&(1<<16-1)]).Err(); err != redis.Nil {
				b.Fatal(err)
			}
			i++
		}
	}

	b.Run("impl=go-redis-GET/absent", get)
	b.Run("impl=local/absent", probe(local, absent))
	b.Run("impl=local/present", probe(local, rows))
	b.Run("impl=fleet/absent", probe(fleet, absent))
	b.Run("impl=fleet/present", probe(fleet, rows))
	b.Run("impl=redis/absent", probe(shared, absent))
	b.Run("impl=redis/present", probe(shared, rows))
	b.Run("impl=redis-many-1000/absent", func(b *testing.B) {
		// MayContainMany: one script call per 1000 keys; reported per key.
		b.ReportAllocs()
		defer serverCost(b, rdb, "evalsha", 1000)()
		for b.Loop() {
			if _, err := shared.MayContainMany(ctx, absent[:1000]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/key")
	})
	b.Run("impl=redis-many-2000/absent", func(b *testing.B) {
		// Batches of 2000 keys: large enough next to this 1.2 MB bitmap
		// for the script to read the bitmap once instead of GETBIT per bit.
		big, err := bloom.NewRedis(ctx, rdb, "bench:bloom:users", bloomKeys, bloomFP, bloom.WithBatchSize(2000))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		defer serverCost(b, rdb, "evalsha", 2000)()
		for b.Loop() {
			if _, err := big.MayContainMany(ctx, absent[:2000]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2000), "ns/key")
	})
	b.Run("impl=go-redis-GET/absent/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				rdb.Get(ctx, absent[i&(1<<16-1)])
				i++
			}
		})
	})
	b.Run("impl=local/absent/parallel", parallel(local, absent))
	b.Run("impl=fleet/absent/parallel", parallel(fleet, absent))
	b.Run("impl=redis/absent/parallel", parallel(shared, absent))
}

// BenchmarkBloomFleetStart is an instance starting while its fleet's
// filter of 10,000,000 keys at 1 % (95.9M bits, 11.4 MiB) is in Redis:
// NewFleet reads the bitmap in 1 MiB chunks and is ready without scanning
// the database (rows-scanned counts the source's rows read by the starting
// instance: none). The filter is built once, by a Rebuild from a source of
// generated keys.
func BenchmarkBloomFleetStart(b *testing.B) {
	ctx := context.Background()
	rdb := newClient(b)
	const n = 10_000_000
	name := "bench:bloom:fleet-start"
	first, err := bloom.NewFleet(ctx, rdb, name, n, bloomFP)
	if errors.Is(err, bloom.ErrMismatch) {
		rdb.Del(ctx, "{"+name+"}:cfg", "{"+name+"}:bits")
		first, err = bloom.NewFleet(ctx, rdb, name, n, bloomFP)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer first.Close()
	if !first.Ready() {
		keys := func(yield func(string, error) bool) {
			for i := range n {
				if !yield("user:"+strconv.Itoa(i), nil) {
					return
				}
			}
		}
		if err := first.Rebuild(ctx, keys); err != nil {
			b.Fatal(err)
		}
	}
	scanned := 0
	for b.Loop() {
		f, err := bloom.NewFleet(ctx, rdb, name, n, bloomFP)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.WaitReady(ctx); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	b.ReportMetric(float64(scanned), "rows-scanned")
}
