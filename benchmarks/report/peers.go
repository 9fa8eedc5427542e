package main

// How each library runs, stated in one line beside its rows: its
// configuration (libraryConfig), then what a table adds about it
// (table.notes, peerNotes).

import "strings"

// libraryConfig is each row name's configuration, as the benchmarks'
// adapters set it up (benchmarks/lib_*_test.go).
var libraryConfig = map[string]string{
	"cacheguard":            "cache.New, JSON, defaults (singleflight and a lease in Redis, ±10 % TTL jitter, read queues); no local tier, no Bloom filter",
	"cacheguard+msgpack":    "cache.New, MessagePack (codec/msgpack); no local tier, no Bloom filter",
	"cacheguard+local":      "cache.New with WithLocal and WithLocalAdmitAll (every key in the local tier, invalidated across instances by pub/sub); no Bloom filter",
	"cacheguard+bloom":      "cache.New with WithBloom: a local Bloom filter of the 100 000 rows, 1 % false positives; no local tier",
	"cacheguard+hotkeys":    "cache.New with WithLocal and WithHotKeys: promoted hot keys only; no Bloom filter",
	"go-zero":               "cache.NewNode + TakeCtx: singleflight per process, `*` placeholder for absent rows",
	"rockscache":            "Client.Fetch2, default options (weak consistency, lock in the entry polled every 100 ms)",
	"gocache":               "NewLoadable over the Redis store: singleflight per process, asynchronous fill, no absence caching",
	"gocache+local":         "NewLoadable over NewChain(ristretto, Redis store); no invalidation across instances",
	"go-redis-cache":        "Cache.Once, MessagePack (default), no local cache",
	"go-redis-cache+json":   "Cache.Once, JSON, no local cache",
	"go-redis-cache+local":  "Cache.Once with its TinyLFU local cache; no invalidation across instances",
	"jetcache":              "Cache.Once, MessagePack (default), remote only, statistics off",
	"jetcache+json":         "Cache.Once, JSON, remote only, statistics off",
	"jetcache+local":        "Cache.Once with its TinyLFU local cache in front of Redis; no invalidation across instances (no event handler given)",
	"rueidis":               "hand-written cache-aside on rueidis Do (GET; on a miss load and SET PX), automatic pipelining; rueidis's own cache-aside is the rueidisaside row",
	"rueidis+local":         "hand-written cache-aside on rueidis DoCache: client-side caching (RESP3 tracking), the server invalidating the copy; rueidis's own cache-aside is the rueidisaside+local row",
	"rueidisaside":          "rueidisaside v1.0.64 Get through NewTypedCacheAsideClient (JSON), defaults: a lease in the key (SET NX GET of a placeholder), waiters woken by the server's invalidation, absent rows cached as null for the value TTL; its client-side cache cannot be turned off (DisableCache also stops the tracking its waiters are woken by), so it is shrunk to 1 byte per connection (CacheSizeEachConn): no reply is kept, every Get goes to Redis, the closest to no local tier it allows",
	"rueidisaside+local":    "rueidisaside v1.0.64 Get with its client-side cache at rueidis's default 128 MiB per connection, kept for the value TTL (it has no local TTL of its own), the server invalidating the copy; lease and absence caching as without a local tier",
	"sturdyc":               "GetOrFetch on its sharded memory, Redis as its distributed storage, absent rows cached",
	"sturdyc+local":         "GetOrFetch on its sharded memory, Redis as its distributed storage, absent rows cached",
	"go-redis":              "hand-written cache-aside on go-redis: GET; on a miss load and SET with a fixed TTL",
	"go-redis-GET+json":     "bare go-redis GET + json.Unmarshal through the connection pool (the baseline; no cache logic)",
	"go-redis-autopipeline": "bare go-redis GET + json.Unmarshal through go-redis's AutoPipeliner",
}

// configLine is the configuration of a row's library: its own line, else
// that of the name before its last "+variant", else "".
func configLine(impl string) string {
	for name := impl; name != ""; {
		if c, ok := libraryConfig[name]; ok {
			return c
		}
		i := strings.LastIndex(name, "+")
		if i < 0 {
			break
		}
		name = name[:i]
	}
	return ""
}

// rowNote is the note beside a row: the table's remark about the library
// (if any) after the library's configuration.
func rowNote(t table, impl string) string {
	cfg, remark := configLine(impl), t.notes[impl]
	switch {
	case remark == "" || strings.Contains(cfg, remark):
		return cfg
	case cfg == "" || strings.Contains(remark, cfg):
		return remark
	default:
		return cfg + ". Here: " + remark
	}
}

// withGroupNote appends to note the table's remark on the group of rows
// name belongs to, if any.
func withGroupNote(t table, name, note string) string {
	for group, remark := range t.groupNotes {
		if !strings.HasPrefix(label(name, t.prefix), group) {
			continue
		}
		if note == "" {
			return remark
		}
		return note + ". " + remark
	}
	return note
}

// peerNotes are the tables' remarks about rueidis, rueidisaside and sturdyc.
var peerNotes = map[string]map[string]string{
	"LocalHit/": {
		"rueidis": "client-side caching (DoCache, RESP3 tracking); decodes on every hit",
		"sturdyc": "sharded map of decoded values",
	},
	"Zipfian/": {
		"rueidis":            "no local tier; automatic pipelining, no sharing of reads of one key",
		"rueidis+local":      "client-side caching (DoCache): the server invalidates the copy",
		"rueidisaside":       "every Get a round trip (client-side cache of 1 byte); concurrent reads of one key share a request in flight",
		"rueidisaside+local": "client-side caching: the server invalidates the copy",
		"sturdyc+local":      "memory first, Redis as its distributed storage",
	},
	"Stampede/": {
		"rueidis":      "no deduplication at all",
		"rueidisaside": "lease in the key; waiters woken by the server's invalidation of it",
	},
	"Penetration/": {
		"rueidis":      noteNoNull,
		"rueidisaside": "absent rows cached as null, for the value TTL",
	},
	"MassExpiry/": {
		"rueidis": "no jitter, no deduplication",
	},
}

func init() {
	for i, t := range tables {
		notes, ok := peerNotes[t.prefix]
		if !ok || t.notes == nil {
			continue
		}
		for lib, note := range notes {
			if _, set := t.notes[lib]; !set {
				tables[i].notes[lib] = note
			}
		}
	}
}
