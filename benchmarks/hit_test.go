package benchmarks

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// row is a typical repository row.
type row struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
	Score     float64   `json:"score"`
	Version   int64     `json:"version"`
}

// sampleRow is one row, for benchmarks that need just one.
var sampleRow = row{ID: 42, Name: "Ada Lovelace", Email: "ada@example.com", CreatedAt: time.Unix(1700000000, 0).UTC(), Score: 9.5}

// remoteConfig is the scenario configuration without a local tier: every
// library reads Redis on every call.
func remoteConfig(db *simDB, prefix string) implConfig {
	return implConfig{db: db, prefix: prefix, ttl: time.Hour, nullTTL: time.Minute}
}

// hitKey is the key of the hit benchmarks. It is a variable, not a
// constant: every library builds its Redis key from the caller's key at run
// time (a prefix concatenation, and the string boxed into go-redis's
// arguments), and so must the go-redis baseline. With a constant the
// compiler folds "raw:"+"42" into one static string, and the baseline skips
// work no application reading rows by id skips (about 1 % of a Redis hit on
// the reference machine).
var hitKey = "42"

// BenchmarkRedisHit measures the Redis-hit path: the row is in Redis, every
// Get is one round trip plus decoding. The baseline is the least a caller
// could do by hand: a go-redis GET plus json.Unmarshal of the same row
// (impl=go-redis-GET+json); every library reads the same row from the same
// server through its own client. Serial runs measure latency, parallel runs
// (2×GOMAXPROCS goroutines) throughput.
func BenchmarkRedisHit(b *testing.B) {
	ctx := context.Background()
	key := hitKey
	db := newSimDB(zipfKeys, 0, 0)

	b.Run("impl=go-redis-GET+json", func(b *testing.B) {
		rdb, rt := countedClient(b)
		raw, _ := json.Marshal(makeRow(42))
		rdb.Set(ctx, "raw:"+key, raw, time.Hour)
		b.ReportAllocs()
		rts := (&cacheImpl{rt: rt}).roundTrips()
		for b.Loop() {
			data, err := rdb.Get(ctx, "raw:"+key).Bytes()
			if err != nil {
				b.Fatal(err)
			}
			var r row
			if err := json.Unmarshal(data, &r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rts())/float64(b.N), "redis-roundtrips/op")
	})
	for _, lib := range remoteLibraries() {
		if lib.name == "go-redis" {
			continue // its hit path is the baseline above
		}
		for _, codec := range hitCodecs(lib.name) {
			name := lib.name
			if codec != "" {
				name += "+" + codec
			}
			cfg := remoteConfig(db, "hit:"+name+":")
			cfg.codec = codec
			benchRedisHit(b, name, cfg, lib, db)
		}
	}

	// Throughput under concurrency, for the baseline and cacheguard.
	b.Run("impl=go-redis-GET+json/parallel", func(b *testing.B) {
		rdb, _ := countedClient(b)
		raw, _ := json.Marshal(makeRow(42))
		rdb.Set(ctx, "raw:"+key, raw, time.Hour)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				data, err := rdb.Get(ctx, "raw:"+key).Bytes()
				var r row
				if err == nil {
					err = json.Unmarshal(data, &r)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("impl=cacheguard/parallel", func(b *testing.B) {
		c := openCacheguard(b, remoteConfig(db, "hit:cacheguard:"))
		defer c.close()
		if _, err := c.get(ctx, key); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.get(ctx, key); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// waitStored waits until key exists in Redis: gocache fills from a
// goroutine, so its first Get returns before the value is stored.
func waitStored(tb testing.TB, key string) {
	rdb := newClient(tb)
	for deadline := time.Now().Add(5 * time.Second); rdb.Exists(context.Background(), key).Val() == 0; {
		if time.Now().After(deadline) {
			tb.Fatalf("%s never stored", key)
		}
		time.Sleep(time.Millisecond)
	}
}

// benchRedisHit runs the serial Redis hit of one library (on one codec) as
// its own benchmark, for its allocations: its time is better read from
// BenchmarkRedisHitSerial, where the libraries take turns.
func benchRedisHit(b *testing.B, name string, cfg implConfig, lib library, db *simDB) {
	ctx := context.Background()
	key := hitKey
	b.Run("impl="+name, func(b *testing.B) {
		c := lib.open(b, cfg)
		defer c.close()
		if _, err := c.get(ctx, key); err != nil {
			b.Fatal(err)
		}
		waitStored(b, cfg.prefix+key)
		b.ReportAllocs()
		rts := c.roundTrips()
		loads := db.queries.Load()
		for b.Loop() {
			if _, err := c.get(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rts())/float64(b.N), "redis-roundtrips/op")
		if n := db.queries.Load() - loads; n != 0 {
			b.Fatalf("%d database loads on the hit path", n)
		}
	})
}
