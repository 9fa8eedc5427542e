package benchmarks

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// hitBlock is how many serial Gets one library makes in its turn of
// BenchmarkRedisHitSerial: enough to amortise the clock reads, few enough
// that every library gets many turns per pass.
const hitBlock = 16

// BenchmarkRedisHitSerial measures the serial Redis hit of every library in
// one loop, taking turns (interleave_test.go), so that all see the same
// stretch of a shared machine: the serial rows of BenchmarkRedisHit, run one
// library after another, differed by more than the libraries do. Where a
// library can use JSON and MessagePack it runs on both, so that each can be
// compared with the others on the same codec; the go-redis GET plus
// json.Unmarshal baseline runs in the same loop. Each turn is hitBlock Gets
// of one row; a library's figure is its median time per Get over its turns.
func BenchmarkRedisHitSerial(b *testing.B) {
	ctx := context.Background()
	key := hitKey
	db := newSimDB(zipfKeys, 0, 0)

	var names []string
	var gets []func() error
	rdb, _ := countedClient(b)
	raw, _ := json.Marshal(makeRow(42))
	rdb.Set(ctx, "serial:raw:"+key, raw, time.Hour)
	names = append(names, "go-redis-GET+json")
	gets = append(gets, func() error {
		data, err := rdb.Get(ctx, "serial:raw:"+key).Bytes()
		if err != nil {
			return err
		}
		var r row
		return json.Unmarshal(data, &r)
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
			cfg := remoteConfig(db, "serial:"+name+":")
			cfg.codec = codec
			c := lib.open(b, cfg)
			defer c.close()
			if _, err := c.get(ctx, key); err != nil {
				b.Fatal(err)
			}
			waitStored(b, "serial:"+name+":"+key)
			names = append(names, name)
			gets = append(gets, func() error { _, err := c.get(ctx, key); return err })
		}
	}
	interleaved(b, names, func(l int) roundMetrics {
		start := time.Now()
		for range hitBlock {
			if err := gets[l](); err != nil {
				b.Fatalf("%s: %v", names[l], err)
			}
		}
		return roundMetrics{"sec/op": time.Since(start).Seconds() / hitBlock}
	})
}

// hitCodecs are the codecs a library runs on in BenchmarkRedisHitSerial: ""
// is its default (JSON for cacheguard, MessagePack for go-redis/cache and
// jetcache-go, JSON in the adapters of the others), then the other codec
// where the library offers a choice.
func hitCodecs(lib string) []string {
	switch lib {
	case "cacheguard":
		return []string{"", "msgpack"}
	case "go-redis-cache", "jetcache":
		return []string{"", "json"}
	}
	return []string{""}
}
