package main

// The workload tables RESULTS.md has, one per measured workload (the cold
// storms, faults, CPU and memory are in tables_storms.go).

// column describes one column of a workload table.
type column struct {
	unit, title string
}

// table describes one workload table.
type table struct {
	title, about string
	prefix       string
	columns      []column
	// ratioTo, if set, adds a column: this row's sec/op over that row's.
	ratioTo, ratioTitle string
	// inverse makes the ratio column that row's sec/op over this row's
	// (a throughput ratio).
	inverse bool
	notes   map[string]string
	// groupNotes are remarks on the rows whose name, after prefix,
	// begins with the key (a sub-benchmark: "fault=failover/"), put
	// after the row's note.
	groupNotes map[string]string
	// command, if set, is the command of one pass that makes the table's
	// rows, printed under it.
	command string
	// always writes the table's heading even when the results hold none
	// of its rows, saying it is not measured yet.
	always bool
	// paired, if set, adds a column after the others: cacheguard's figure
	// over the row's on this unit, paired (the median over the rounds in
	// which the libraries took turns), under pairedTitle.
	paired, pairedTitle string
}

var noteNoNull = "no absence caching: every read of an absent row queries the database"

var baseTables = []table{
	{
		title:   "Redis-hit path",
		about:   "One Get of a row that is in Redis (no local tier): one round trip and decoding. Serial unless marked parallel; the libraries run one after another, so read time from the next table (libraries taking turns) and allocations from this one.",
		prefix:  "RedisHit/",
		columns: []column{{"sec/op", "time/op"}, {"redis-roundtrips/op", "round trips/op"}, {"B/op", "B/op"}, {"allocs/op", "allocs/op"}},
		ratioTo: "RedisHit/impl=go-redis-GET+json", ratioTitle: "vs GET+json",
		notes: map[string]string{
			"rockscache":          "sends its Lua script in full (EVAL) on every read",
			"cacheguard+msgpack":  "MessagePack (codec/msgpack)",
			"go-redis-cache":      "MessagePack (default)",
			"go-redis-cache+json": "JSON",
			"jetcache":            "MessagePack (default)",
			"jetcache+json":       "JSON",
		},
	},
	{
		title:   "Redis hit, serial, libraries taking turns",
		about:   "The serial Redis hit of every library in one loop, each making 16 Gets in its turn, so that all see the same machine; the median time per Get over the turns. Libraries that offer both run on JSON and on MessagePack (`+json`, `+msgpack`: the codec that is not their default).",
		prefix:  "RedisHitSerial/",
		columns: []column{{"sec/op", "time per Get"}},
		ratioTo: "RedisHitSerial/impl=go-redis-GET+json", ratioTitle: "vs GET+json",
		notes: map[string]string{
			"cacheguard":          "JSON (default)",
			"cacheguard+msgpack":  "MessagePack (codec/msgpack)",
			"go-zero":             "JSON",
			"rockscache":          "JSON; sends its Lua script in full (EVAL) on every read",
			"gocache":             "JSON",
			"go-redis-cache":      "MessagePack (default)",
			"go-redis-cache+json": "JSON",
			"jetcache":            "MessagePack (default)",
			"jetcache+json":       "JSON",
		},
	},
	{
		title:   "Hit paths, paired",
		about:   "cacheguard and its baseline run in alternating blocks in one loop, so both see the same machine; `ratio` is the median over iterations of cacheguard's block time over the baseline's in the same iteration (the two blocks swap order every iteration). Targets: at most 1.05 on the Redis hit, 1.3 on the local hit.",
		prefix:  "Paired/",
		columns: []column{{"raw-sec/op", "GET+json"}, {"ristretto-sec/op", "ristretto Get"}, {"cacheguard-sec/op", "cacheguard"}, {"ratio", "ratio"}},
	},
	{
		title:   "Lock, uncontended, paired",
		about:   "One uncontended TryLock and Unlock of a cacheguard Mutex (`base`) and one of another library (`vs`), taking turns in one loop (each goes first half the time); the median time of each and `ratio`, the median over iterations of cacheguard's time over the other's in the same iteration. `cacheguard` draws a fencing token; `cacheguard-unfenced` (WithoutFencing) does not, like the others; `-ctxtimeout`: both on go-redis clients made with ContextTimeoutEnabled. Target: at most 1.10 for the fenced Mutex against redislock.",
		prefix:  "LockUncontendedPaired/",
		columns: []column{{"base-sec/op", "cacheguard"}, {"other-sec/op", "other"}, {"ratio", "ratio"}},
	},
	{
		title:   "Local-hit path",
		about:   "One Get of a row held in process memory. cacheguard keeps decoded values; the other libraries keep encoded bytes and decode on every hit.",
		prefix:  "LocalHit/",
		columns: []column{{"sec/op", "time/op"}, {"local-hits/op", "local hits/op"}, {"redis-roundtrips/op", "round trips/op"}, {"B/op", "B/op"}, {"allocs/op", "allocs/op"}},
		ratioTo: "LocalHit/impl=ristretto", ratioTitle: "vs ristretto",
		notes: map[string]string{
			"cacheguard+hotkeys":   "detector records every Get",
			"cacheguard+ristretto": "ristretto store (WithLocalRistretto)",
			"gocache":              "chain: GET of the ristretto layer, then JSON decoding",
		},
	},
	{
		title:   "Local store hit ratio (zipfian trace)",
		about:   "Share of hits replaying the zipfian trace (s = 1.1, 100 000 rows) into a store of the given size; oracle holds exactly the most frequent rows.",
		prefix:  "LocalHitRatio/",
		columns: []column{{"hit-%", "hit %"}},
	},
	{
		title:   "Local store memory",
		about:   "Heap in use per cached entry (an int value under a short string key), measured around filling a cache's local tier with every entry; the cache's fixed cost is spread over the entries.",
		prefix:  "LocalStoreMemory/",
		columns: []column{{"heap-B/entry", "heap bytes per entry"}},
	},
	{
		title:   "Zipfian reads over 100 000 rows",
		about:   "8 goroutines read along a zipfian trace (s = 1.1); every row is in Redis. `throughput` is relative to cacheguard without a local tier.",
		prefix:  "Zipfian/",
		columns: []column{{"sec/op", "time/op"}, {"redis-roundtrips/op", "round trips/op"}, {"db-loads/op", "DB loads/op"}},
		ratioTo: "Zipfian/impl=cacheguard", ratioTitle: "throughput", inverse: true,
		notes: map[string]string{
			"cacheguard+hotkeys":      "local tier admits promoted hot keys only (k = 1000, 10 reads/s)",
			"cacheguard+hotkeys-wide": "local tier admits promoted hot keys only (k = 10 000, 2 reads/s)",
			"cacheguard+local-all":    "local tier admits every key (WithLocalAdmitAll)",
			"go-zero":                 "no local tier; concurrent reads of one key share a GET",
			"rockscache":              "no local tier; concurrent reads of one key share a call",
			"go-redis-cache":          "concurrent reads of one key share a GET; MessagePack",
			"jetcache":                "concurrent reads of one key share a GET; MessagePack",
			"cacheguard+msgpack":      "no local tier; MessagePack (codec/msgpack)",
			"go-redis-cache+json":     "concurrent reads of one key share a GET; JSON",
			"jetcache+json":           "concurrent reads of one key share a GET; JSON",
			"gocache+local":           "chain reads GET + TTL on a local miss",
		},
	},
	{
		title:   "Stampede on one expiring key",
		about:   "200 goroutines per process read one key absent from Redis at the same instant; the database answers in 20 ms. An op is one stampede; `DB loads/op` = 1 is ideal.",
		prefix:  "Stampede/",
		columns: []column{{"sec/op", "time/op"}, {"db-loads/op", "DB loads/op"}, {"slowest-read-ms", "slowest read (ms)"}, {"redis-roundtrips/op", "round trips/op"}, {"failed-reads/op", "failed reads/op"}},
		notes: map[string]string{
			"go-zero":        "singleflight in the process only: one load per process",
			"gocache":        "singleflight in the process only; fills Redis asynchronously",
			"go-redis-cache": "singleflight in the process only",
			"jetcache":       "singleflight in the process only",
			"go-redis":       "no deduplication at all",
			"rockscache":     "lock in Redis; waiters poll every 100 ms",
			"cacheguard":     "singleflight and one shared Redis read per process + lease in Redis; waiters woken by a fill notification (polling as the fallback)",
		},
	},
	{
		title:   "Penetration: reads of absent rows",
		about:   "8 goroutines read rows that do not exist; the database answers in 1 ms. `absent=repeat`: 1 000 absent ids, each read once before timing; `absent=unique`: never the same id twice.",
		prefix:  "Penetration/",
		columns: []column{{"sec/op", "time/op"}, {"db-loads/op", "DB loads/op"}, {"redis-roundtrips/op", "round trips/op"}},
		notes: map[string]string{
			"gocache":          noteNoNull,
			"go-redis-cache":   noteNoNull,
			"go-redis":         noteNoNull,
			"cacheguard+bloom": "local Bloom filter of the 100 000 rows, 1 % false positives",
		},
	},
	{
		title:   "Mass expiry (avalanche)",
		about:   "500 rows filled at once with a 2 s TTL, then read at 5 000 reads/s (open loop) until 3.4 s after the fill; the database answers in 4 ms through 8 connections (2 000 queries/s). An op is one cycle.",
		prefix:  "MassExpiry/",
		columns: []column{{"db-loads/op", "DB loads/op"}, {"db-peak-qps", "peak DB queries/s"}, {"db-peak-queue", "peak DB queue"}, {"p99-read-ms", "p99 read (ms)"}},
		notes: map[string]string{
			"cacheguard":     "TTL jitter ±10 % (default)",
			"go-zero":        "TTL ±5 %, rounded up to whole seconds (2 s or 3 s here)",
			"rockscache":     "subtracts up to 10 %, truncated to whole seconds (all 2 s here)",
			"gocache":        "no jitter",
			"go-redis-cache": "no jitter",
			"jetcache":       "no jitter on values",
			"go-redis":       "no jitter, no deduplication",
		},
	},
	{
		title:   "Invalidation race (stale reads)",
		about:   "8 readers and 1 writer on 16 rows for 1 s; the database answers in 3 ms and the writer updates a row and invalidates it every 2 ms. A stale read started after an invalidation returned and still got the older row.",
		prefix:  "InvalidationRace/",
		columns: []column{{"stale-reads/op", "stale reads"}, {"reads/op", "reads"}, {"stale-keys-left/op", "stale rows left"}},
		notes: map[string]string{
			"rockscache": "weak consistency by default: serves the invalidated value while it refreshes",
			"cacheguard": "fills are lease-guarded; stale reads come from callers joining a load already in flight",
		},
	},
}
