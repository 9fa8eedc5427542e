package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// memEntries is how many rows BenchmarkRedisMemory stores per library.
const memEntries = 1000

// BenchmarkRedisMemory reports what a cached row costs in Redis: memEntries
// rows are stored through each library's own write call under a fresh
// prefix (the same length for every library, so key names weigh the same),
// then MEMORY USAGE is asked of every key under that prefix. redis-B/entry
// is their total over the rows (every key the library wrote counts: value,
// envelope or hash, key name and Redis's own overhead), raw-B/entry the
// mean size of the row's JSON encoding, redis/raw the one over the other,
// redis-keys/entry the keys per row.
// Each library runs with its default codec; sturdyc, which always has its
// memory tier, with it on (its Redis record does not depend on it).
// Local-tier bytes per entry are BenchmarkLocalStoreMemory's.
func BenchmarkRedisMemory(b *testing.B) {
	db := newSimDB(zipfKeys, 0, 0)
	var raw float64
	entries := scaled(memEntries, 100)
	for i := range entries {
		data, _ := json.Marshal(makeRow(i))
		raw += float64(len(data))
	}
	raw /= float64(entries)
	for i, lib := range libraries() {
		name := lib.name
		if lib.localOnly {
			name += "+local"
		}
		b.Run("impl="+name, func(b *testing.B) {
			var bytes, keys float64
			for b.Loop() {
				cfg := remoteConfig(db, fmt.Sprintf("mem%02d:%s:", i, nonce()))
				if lib.localOnly {
					cfg.local, cfg.localEntries, cfg.localTTL = true, entries, time.Minute
				}
				bytes, keys = redisFootprint(b, lib, cfg, entries)
			}
			b.ReportMetric(bytes/float64(entries), "redis-B/entry")
			b.ReportMetric(raw, "raw-B/entry")
			b.ReportMetric(bytes/float64(entries)/raw, "redis/raw")
			b.ReportMetric(keys/float64(entries), "redis-keys/entry")
		})
	}
}

// redisFootprint stores entries rows through the library, then adds up
// MEMORY USAGE over every key under cfg.prefix; it removes them after.
func redisFootprint(b *testing.B, lib library, cfg implConfig, entries int) (bytes, keys float64) {
	ctx := context.Background()
	c := lib.open(b, cfg)
	defer func() {
		c.close()
		dropPrefix(b, cfg, cfg.prefix)
	}()
	var failed atomic.Value
	parallel(8, entries, func(i int) {
		if err := c.set(ctx, keyNames()[i], makeRow(i)); err != nil {
			failed.Store(err)
		}
	})
	if err, ok := failed.Load().(error); ok {
		b.Fatalf("%s: storing rows: %v", lib.name, err)
	}
	rdb, _ := cfg.plainClient(b)
	var names []string
	iter := rdb.Scan(ctx, 0, cfg.prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		names = append(names, iter.Val())
	}
	if err := iter.Err(); err != nil {
		b.Fatal(err)
	}
	for start := 0; start < len(names); start += 500 {
		batch := names[start:min(start+500, len(names))]
		p := rdb.Pipeline()
		for _, k := range batch {
			p.MemoryUsage(ctx, k)
		}
		cmds, err := p.Exec(ctx)
		if err != nil {
			b.Fatalf("MEMORY USAGE: %v", err)
		}
		for _, cmd := range cmds {
			bytes += float64(cmd.(*redis.IntCmd).Val())
		}
	}
	return bytes, float64(len(names))
}
