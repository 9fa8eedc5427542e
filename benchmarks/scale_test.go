package benchmarks

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Reads that outgrow one node (docs/scale.md): a hot key on a cluster,
// without and with cacheguard's copies on other masters, beside the
// libraries that run on a cluster; and reads from replicas. Every server
// shares the machine with the clients, so spreading work over more nodes
// shows what it costs and where the reads go more than what it gains.

const scaleGoroutines = 64

// BenchmarkHotKeyCluster: one key read by 64 goroutines on a 3-master
// cluster, the libraries taking turns. busiest-node-share is the part of
// all commands the masters ran in a turn that the busiest one ran.
func BenchmarkHotKeyCluster(b *testing.B) {
	cl, _ := redistest.StartCluster(b)
	cfg := func(name string) implConfig {
		c := remoteConfig(newSimDB(1, 0, 0), "hot:"+name+":")
		c.cluster = cl.Addrs()
		return c
	}
	var libs []contestant
	raw := cfg("go-redis-GET+json")
	rdb, rt := raw.client(b)
	libs = append(libs, contestant{"go-redis-GET+json", cacheAside(rdb, rt, raw)})
	for _, lib := range remoteLibraries() {
		if !lib.cluster || lib.name == "go-redis" {
			continue
		}
		libs = append(libs, contestant{lib.name, lib.open(b, cfg(lib.name))})
		if lib.name == "cacheguard" {
			c := cfg("cacheguard+copies")
			c.copies = 2
			libs = append(libs, contestant{"cacheguard+copies", openCacheguard(b, c)})
		}
	}
	masters := make([]*redis.Client, len(cl.Masters))
	for i, m := range cl.Masters {
		masters[i] = m.Client()
	}
	runScale(b, libs, masters, func(int) func() string { return func() string { return "0" } })
}

// BenchmarkReplicaReads: zipfian reads of 10,000 rows by 64 goroutines on
// a 3-master cluster with a replica each, through clients that read masters
// only and through clients that read masters and replicas at random
// (cacheguard with WithReplicaReads). replica-share is the part of the
// commands the six nodes ran in a turn that the replicas ran.
func BenchmarkReplicaReads(b *testing.B) {
	rc, _ := redistest.StartClusterWithReplicas(b)
	db := newSimDB(curveRowCount(), 0, 0)
	var libs []contestant
	for _, replicas := range []bool{false, true} {
		suffix := "+masters"
		if replicas {
			suffix = "+replicas"
		}
		cfg := func(name string) implConfig {
			c := remoteConfig(db, "replica:"+name+":")
			c.cluster, c.replicaReads = rc.Addrs(), replicas
			return c
		}
		raw := cfg("go-redis-GET+json")
		rdb, rt := raw.client(b)
		libs = append(libs, contestant{"go-redis-GET+json" + suffix, cacheAside(rdb, rt, raw)})
		c := cfg("cacheguard")
		libs = append(libs, contestant{"cacheguard" + suffix, openCacheguard(b, c)})
	}
	for _, l := range libs {
		name := strings.TrimSuffix(strings.TrimSuffix(l.name, "+masters"), "+replicas")
		fillCurve(b, l.c, implConfig{db: db, prefix: "replica:" + name + ":", cluster: rc.Addrs()})
	}
	nodes := make([]*redis.Client, 0, 6)
	for _, n := range slices.Concat(rc.Masters, rc.Replicas) {
		nodes = append(nodes, n.Client())
	}
	runScale(b, libs, nodes, curveKeys("zipfian"))
}

// runScale runs the libraries in turns, each for one cell of 64 goroutines
// reading keys, and reports reads/s, p99 and how the nodes shared the
// commands: the busiest node's part, and the part of nodes[3:] (the
// replicas, when there are six).
func runScale(b *testing.B, libs []contestant, nodes []*redis.Client, keys func(w int) func() string) {
	names := make([]string, len(libs))
	for i, l := range libs {
		names[i] = l.name
	}
	interleaved(b, names, func(l int) roundMetrics {
		before := commandCounts(b, nodes)
		res := runCell(libs[l].c.get, scaleGoroutines, curveCell(), keys)
		if res.errs > 0 {
			b.Fatalf("%s: %d of %d reads failed: %v", libs[l].name, res.errs, res.reads, res.err)
		}
		after := commandCounts(b, nodes)
		var total, busiest, replicas float64
		for i := range nodes {
			d := float64(after[i] - before[i])
			total += d
			busiest = max(busiest, d)
			if i >= 3 {
				replicas += d
			}
		}
		m := roundMetrics{"reads/s": res.perSec, "p99-us": res.p99.Seconds() * 1e6}
		if total > 0 {
			m["busiest-node-share"] = busiest / total
			if len(nodes) > 3 {
				m["replica-share"] = replicas / total
			}
		}
		return m
	})
}

// commandCounts reads each node's total_commands_processed.
func commandCounts(b *testing.B, nodes []*redis.Client) []int64 {
	out := make([]int64, len(nodes))
	for i, n := range nodes {
		info, err := n.Info(context.Background(), "stats").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				out[i], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return out
}
