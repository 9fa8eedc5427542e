package main

import (
	"bytes"
	"fmt"
)

// measurement is one figure run.sh does not make: what it measures, where
// to run it and the command that reproduces it.
type measurement struct {
	what, dir, command string
}

// otherMeasurements are the benchmarks and measuring tests outside run.sh's
// tables; a figure quoted anywhere in the repository comes from one of them
// or from the tables above.
var otherMeasurements = []measurement{
	{"lock benchmarks: uncontended, contended, Redlock, semaphore, against redislock and redsync", "benchmarks", "go test -run '^$' -bench '^BenchmarkLock' -benchtime 1000x -count 6 ."},
	{"uncontended Lock+Unlock, fenced and unfenced, taking turns with redislock", "benchmarks", "go test -run '^$' -bench 'BenchmarkLockUncontendedPaired' -benchtime 2000x -count 6 -cpu 2 ."},
	{"lock hand-off between processes, p50 / p99", "benchmarks", "go test -run '^$' -bench 'BenchmarkLockHandoff' -benchtime 600x -count 2 -cpu 2 ."},
	{"Redis calls of waiting lock holders", "benchmarks", "go test -run '^$' -bench 'BenchmarkLockWaiters' -benchtime 1x -count 1 -cpu 2 ."},
	{"codecs: encode and decode of a typical row", "benchmarks", "go test -run '^$' -bench 'Codec' -benchtime 20000x -count 3 ."},
	{"compression of large values", "benchmarks", "go test -run '^$' -bench BenchmarkCompress -benchtime 200ms -count 1 ."},
	{"flash sale: reservations per second, oversell", "benchmarks", "go test -run '^$' -bench FlashSale -benchtime 20000x -count 3 ."},
	{"Bloom filter lookups, local and in Redis", "benchmarks", "go test -run '^$' -bench BenchmarkBloomMayContain -benchtime=1s -count=6 ."},
	{"hot-key promotion on the first sign of heat", "benchmarks", "go test -run '^$' -bench 'HotKeyPromotion' -benchtime 1x -count 1 ."},
	{"CPU of an idle cache", "benchmarks", "go test -run TestIdleCPU -v ."},
	{"where the slowest mass-expiry reads come from", "benchmarks", "go test -run TestMassExpiryTail -v ."},
	{"hot-key detector throughput", ".", "go test -run '^$' -bench . -benchtime=1s -count=6 ./hotkey/"},
	{"hot-key detector accuracy on a zipfian stream", ".", "go test -run TestAccuracyZipf -v ./hotkey/"},
	{"hot-key time to promotion and demotion", ".", "go test -run TestPromotionAndDemotion -v ./hotkey/"},
	{"hot-key tick when the hot set changes at once", ".", "go test -run '^$' -bench 'TickMassChange' -benchtime 20x -count 5 ./hotkey/"},
	{"Bloom filter false-positive rate", ".", "go test -run 'FalsePositiveRate' -v ./bloom/"},
	{"write path: invalidation, delayed double delete, versioned writes", ".", "go test -run '^$' -bench . -benchtime 2s -count 3 ./consistency/"},
	{"write path: draining the retry queue", ".", "go test -run '^$' -bench Drain -benchtime 1s -count 5 ./consistency/"},
	{"write path soak: no stale read survives", ".", "go test -race -run Soak -v ./consistency/"},
	{"local-tier invalidation delay across instances", ".", "go test -run TestInvalidationAcrossInstances -v ./cache/"},
	{"local-tier staleness with the subscriber's connection blackholed", ".", "go test -count=1 -run TestHalfOpenSubscriberIsDetected -v ./cache/"},
	{"local-tier staleness under network faults and failovers", ".", "go test -race -count=1 -run TestFault -v ./cache/"},
	{"wake-up of a lease waiter in another process", ".", "CACHEGUARD_WAKE_LATENCY=200 go test -count=1 -run TestWakeLatency -v ./cache/"},
	{"the storm demo: naive cache-aside against cacheguard under five storms, with a chart naming the machine and its load", ".", "go run ./examples/storm -plot storm.svg"},
	{"the storm demo on a Redis Cluster (three masters started beforehand; the restart storm is skipped)", ".", "go run ./examples/storm -redis 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103 -plot storm-cluster.svg"},
	{"binlog catch-up", "consistency/binlog", "go test -count=2 -run '^$' -bench CatchUp -benchtime 1x ."},
	{"fleet simulation: N instances on a 3-master cluster, commands and connections per node, hot-key detection, reads reaching Redis (table in docs/scale.md)", ".", "go test ./internal/fleetsim -run TestFleetSimulation -v -fleet.n=1,10,100"},
	{"pub/sub connections per master of 20 caches and a lock client on one cluster client", ".", "go test -count=1 -run TestOneConnectionPerMaster -v ./internal/pubsub"},
	{"linearizability of random histories (1 or 3 instances, connections killed), long form", ".", "CACHEGUARD_LINCHECK=long go test -run TestLinearizable -timeout 60m ./internal/lincheck/"},
	{"flash-sale soak: orders in, orders in the database, dead letters, oversell", "stock", "go test -race -count=1 -v -run 'TestSoak$' -timeout 30m . -stock.soak=10m"},
	{"Get's Redis hit over the read queues, go-redis's AutoPipeliner and the connection pool, taking turns, at 1 to 1,024 goroutines", "cache", "go test -run '^$' -bench BenchmarkReadTransport -benchtime 20x ."},
}

// writeOtherCommands lists otherMeasurements.
func writeOtherCommands(w *bytes.Buffer) {
	fmt.Fprintln(w, "## Other measurements")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "run.sh does not make these; each figure quoted from them elsewhere (package docs, the changelog) comes from its command, run in the directory given (from the repository root):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| measures | in | command |")
	fmt.Fprintln(w, "| --- | --- | --- |")
	for _, m := range otherMeasurements {
		fmt.Fprintf(w, "| %s | `%s` | `%s` |\n", m.what, m.dir, m.command)
	}
}
