package main

// The tables of the cold storm, the storms under faults, CPU per Get and
// Redis memory per entry. Each is written even before its benchmark has
// run, saying so, and names the command of one pass.

import "slices"

// tables are all workload tables, in the order RESULTS.md has them.
var tables = slices.Concat(baseTables, stormTables)

// passCommand is the command of one pass of a benchmark of run.sh's set.
func passCommand(bench string) string {
	return "go test -run '^$' -bench '^Benchmark" + bench + "$' -benchtime 500ms -count 1 -timeout 60m ."
}

var stormTables = []table{
	{
		title:   "Cold storm: every key missing at once",
		about:   "10 000 rows, none cached (as after a Redis restart, a `Clear` or a deploy), read uniformly by 64 or 256 goroutines: every row 3 times, in one shuffled order the same for every library; the database answers in 1 ms with no cap on connections. `tier=none`: no local tier on any side (sturdyc, which always has its memory tier, is left out); `tier=local`: every library's local tier on, room for every row, fresh for 5 s (cacheguard's admits every key: a uniform storm has no hot keys). The same reads then run again once every row is cached: `cold/warm` is the storm's Gets/s over that warm rate. `loads/key` is database loads over rows (1 when each row is loaded once); commands and round trips per key are what the storm cost beyond the warm reads of the same sequence (cold − warm × 2/3, over the rows), counted by a go-redis hook on each library's client (one round trip per command sent alone or per pipeline; rueidis and rueidisaside count their calls themselves, a DoCache that misses the process's copy as one round trip of 5 commands: CLIENT CACHING YES, MULTI, PTTL, GET, EXEC; their automatic pipelining may share round trips further on the wire); p50 and p99 are the cold reads'. The libraries take turns, one storm each per round, on fresh prefixes.",
		prefix:  "ColdStorm/",
		columns: []column{{"gets/s", "Gets/s"}, {"warm-gets/s", "warm Gets/s"}, {"cold/warm", "cold/warm"}, {"loads-per-key", "loads/key"}, {"cmds-per-key", "commands/key"}, {"roundtrips-per-key", "round trips/key"}, {"p50-us", "p50 (µs)"}, {"p99-us", "p99 (µs)"}, {"failed-reads", "failed reads"}},
		paired:  "gets/s", pairedTitle: "cacheguard / this, Gets/s (paired)",
		notes:   map[string]string{"rueidis": "no deduplication: concurrent misses of one key each load it", "go-redis": "no deduplication: concurrent misses of one key each load it"},
		command: passCommand("ColdStorm"),
		always:  true,
	},
	{
		title:   "Storms under faults",
		about:   "64 goroutines read 2 000 cached rows through one instance of a library while a writer updates a row in the database and invalidates it through a second instance on the same prefix every 10 ms; 1 s into the storm the server is killed and restarted empty (`fault=restart`), flushed (`fault=flushall`) or failed over to its replica by its Sentinels (`fault=failover`; go-zero, whose Redis configuration has no Sentinel type, is left out), and the storm goes on for 2 s once the fault is over. Before each storm the node demoted by the previous failover is made a replica of the current master again and synced, as the Sentinels themselves do only 8 s or more later: every storm fails over to a replica that holds its rows. Every call is bounded by a 500 ms context deadline and abandoned 1 s after it (`hung reads`: the library did not honour its context). `loads/key` counts database loads during the storm over the rows (each invalidation costs one too); a stale read started after an invalidation returned and still got the older row (from either instance; without invalidation across instances a local tier serves its copy until it expires); `rows left stale` are the rows a new instance of the library reads older than that once the storm is over (what the storm left in Redis); `two masters` is, for a failover, how long the demoted master went on as a master after its replica reported itself promoted, until every Sentinel named the promoted one; `recovered` is 1 when the storm ended on 300 ms without a failed read at a tenth of the earlier rate at least, by itself; `recovery (ms)` is from the fault's start to the first of those clean buckets. Local tiers (`tier=local`) are fresh for 1 s. The libraries take turns, one storm each per pass, each under a fault of its own, every pass starting with a library drawn at random.",
		prefix:  "FaultStorm/",
		columns: []column{{"loads-per-key", "loads/key"}, {"failed-reads", "failed reads"}, {"hung-reads", "hung reads"}, {"stale-reads", "stale reads"}, {"stale-rows-left", "rows left stale"}, {"recovered", "recovered"}, {"recovery-ms", "recovery (ms)"}, {"split-ms", "two masters (ms)"}},
		notes:   map[string]string{},
		groupNotes: map[string]string{
			"fault=failover/": "Failover: the stale reads and rows left stale here are mostly deletes Redis lost, for every library alike: the demoted master acknowledged them while it was still a master after its replica's promotion (`two masters`), and the promoted master, no longer replicating from it, never got them (asynchronous replication); each storm has a failover of its own, so their number follows that storm's window, not the library",
		},
		command: passCommand("FaultStorm"),
		always:  true,
	},
	{
		title:   "CPU per Get (Redis hits)",
		about:   "The rows of the concurrency curves below (10 000 JSON rows in Redis, uniform reads, no local tier) at 1, 64 and 256 goroutines, the libraries taking turns in rounds of 200 ms: the process's CPU time (user + system, from getrusage) over a round divided by its Gets, with that round's Gets/s. The Redis server's CPU is not in it; the idle libraries' background work is, charged to the one running.",
		prefix:  "CPUPerGet/",
		columns: []column{{"cpu-us/get", "CPU µs per Get"}, {"reads/s", "Gets/s"}},
		paired:  "cpu-us/get", pairedTitle: "cacheguard / this, CPU per Get (paired)",
		notes:   map[string]string{},
		command: passCommand("CPUPerGet"),
		always:  true,
	},
	{
		title:   "Redis memory per entry",
		about:   "1 000 rows stored through each library's own write call under prefixes of one length, then `MEMORY USAGE` of every key under the prefix: their total over the rows (value or envelope or hash, key name and Redis's own overhead; every key the library wrote counts), against the mean size of the row's JSON (`raw`). Each library with its default codec. Local-tier heap per entry is in the local store memory table above.",
		prefix:  "RedisMemory/",
		columns: []column{{"redis-B/entry", "Redis bytes/entry"}, {"raw-B/entry", "raw JSON bytes"}, {"redis/raw", "× raw"}, {"redis-keys/entry", "keys/entry"}},
		notes:   map[string]string{},
		command: passCommand("RedisMemory"),
		always:  true,
	},
	{
		title:   "A hot key on a cluster: copies on other masters",
		about:   "One key, cached, read by 64 goroutines on a 3-master cluster (docs/scale.md), the libraries taking turns in rounds of 200 ms: each as it runs on a cluster by its own docs (no local tier where it has one to turn off; rueidisaside keeps its client-side cache), and cacheguard without and with two copies on the other masters (`cacheguard+copies`: `WithHotKeyCopies(2, 1s)`, its hotkey detector at its defaults deciding that the key is hot). `busiest node` is the part of all the commands the masters ran in a round that the busiest one ran (INFO stats; 1 when one master takes everything). The masters and the clients share one machine: spreading the reads shows where they go and what it costs more than what a cluster of separate machines gains.",
		prefix:  "HotKeyCluster/",
		columns: []column{{"reads/s", "reads/s"}, {"p99-us", "p99 (µs)"}, {"busiest-node-share", "busiest node"}},
		paired:  "reads/s", pairedTitle: "cacheguard / this, reads/s (paired)",
		notes:   map[string]string{"cacheguard+copies": "`WithHotKeyCopies(2, 1s)`, `WithHotKeys(hotkey.New())`"},
		command: passCommand("HotKeyCluster"),
		always:  true,
	},
	{
		title:   "Reads from replicas",
		about:   "Zipfian reads of 10 000 cached rows by 64 goroutines on a 3-master cluster with a replica each, the libraries taking turns in rounds of 200 ms: `+masters` through a cluster client that reads masters only, `+replicas` through one that reads masters and replicas at random (`RouteRandomly`; cacheguard with `WithReplicaReads(1s)`, which a client that reads replicas needs). `replicas' part` is the part of the commands the six nodes ran in a round that the replicas ran; `busiest node` the busiest node's part. All six servers and the clients share one machine: the rows show where the reads go and what routing costs, not the throughput separate machines would add.",
		prefix:  "ReplicaReads/",
		columns: []column{{"reads/s", "reads/s"}, {"p99-us", "p99 (µs)"}, {"replica-share", "replicas' part"}, {"busiest-node-share", "busiest node"}},
		notes: map[string]string{
			"go-redis-GET+json+masters": "masters only", "go-redis-GET+json+replicas": "`RouteRandomly`",
			"cacheguard+masters": "masters only", "cacheguard+replicas": "`RouteRandomly`, `WithReplicaReads(1s)`",
		},
		command: passCommand("ReplicaReads"),
		always:  true,
	},
}
