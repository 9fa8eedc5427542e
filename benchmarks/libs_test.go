package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every library is driven through the same small adapter: read-through get,
// invalidate after a write, close. Each adapter uses the library the way its
// documentation shows, with its defaults unless a setting below says
// otherwise; nothing is added to any library.

// cacheImpl is one library, configured, on its own Redis client.
type cacheImpl struct {
	// get returns the row for key, loading it from the simulated database on
	// a miss; errNoRow when the row does not exist.
	get func(ctx context.Context, key string) (row, error)
	// set stores r under key through the library's own write call (used
	// to fill Redis quickly before a measurement).
	set func(ctx context.Context, key string, r row) error
	// del invalidates key after a write to its row.
	del func(ctx context.Context, key string) error
	// close releases the library's resources.
	close func()
	// rt counts the round trips of the library's Redis client.
	rt *rtCounter
}

// implConfig is what a scenario asks of a library.
type implConfig struct {
	db      *simDB
	prefix  string        // key prefix, unique per library and scenario
	ttl     time.Duration // value TTL
	nullTTL time.Duration // TTL of a cached absence, where the library has one

	// local turns on the library's in-process tier, if it has one, with
	// room for localEntries rows kept for localTTL.
	local        bool
	localEntries int
	localTTL     time.Duration
	// admitAll makes cacheguard's local tier admit every key instead of
	// only the keys its hot-key detector promotes (the others always
	// admit every key).
	admitAll bool
	// hotK and hotMinCount, when set, replace cacheguard's default hot-key
	// settings (hotK, hotMinCount).
	hotK, hotMinCount int
	// codec, when set, replaces the library's default codec: "json" or
	// "msgpack" (for comparing libraries on the same codec).
	codec string
	// bloom puts a Bloom filter of the database's rows (1 % false
	// positives) in front of cacheguard; no other library has one.
	bloom bool
	// cluster, when set, are the seed addresses of a Redis Cluster the
	// library uses instead of the shared server (libraries with
	// library.cluster only).
	cluster []string
	// addr, when set, is a redis-server of the scenario's own (one it
	// restarts or flushes) used instead of the shared server.
	addr string
	// sentinel, when set, names a master behind Sentinels, used instead
	// of the shared server (libraries with library.sentinel only).
	sentinel *redis.FailoverOptions
	// replicaReads makes the cluster client read masters and replicas at
	// random (RouteRandomly); cacheguard then runs WithReplicaReads.
	replicaReads bool
	// copies turns on cacheguard's hot-key copies (WithHotKeyCopies), with
	// its detector's default settings deciding which keys are hot.
	copies int
}

// client returns a new go-redis client for the library, with a round-trip
// counter: on the cluster when cfg.cluster is set, else as plainClient.
func (cfg implConfig) client(tb testing.TB) (redis.UniversalClient, *rtCounter) {
	if len(cfg.cluster) == 0 {
		return cfg.plainClient(tb)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.cluster, RouteRandomly: cfg.replicaReads})
	tb.Cleanup(func() { c.Close() })
	rt := &rtCounter{}
	c.AddHook(rt)
	return c, rt
}

// plainClient returns a new single-node go-redis client for the library,
// with a round-trip counter: a failover client when cfg.sentinel is set,
// else a client of cfg.addr or of the shared server.
func (cfg implConfig) plainClient(tb testing.TB) (*redis.Client, *rtCounter) {
	var c *redis.Client
	switch {
	case cfg.sentinel != nil:
		o := *cfg.sentinel
		c = redis.NewFailoverClient(&o)
	case cfg.addr != "":
		c = redis.NewClient(&redis.Options{Addr: cfg.addr})
	default:
		return countedClient(tb)
	}
	tb.Cleanup(func() { c.Close() })
	rt := &rtCounter{}
	c.AddHook(rt)
	return c, rt
}

// library names a library and says what it can express.
type library struct {
	name string
	// open builds the library for a scenario.
	open func(tb testing.TB, cfg implConfig) *cacheImpl
	// local: it has an in-process tier in front of Redis.
	local bool
	// crossProcess: concurrent misses in different processes share one load.
	crossProcess bool
	// nullCache: an absent row is cached.
	nullCache bool
	// cluster: its adapter runs on a Redis Cluster (implConfig.cluster).
	cluster bool
	// sentinel: its adapter follows a master behind Sentinels
	// (implConfig.sentinel).
	sentinel bool
	// localOnly: its in-process tier cannot be turned off, so it runs
	// only in the rows that have a local tier (remoteLibraries leaves it
	// out of the others).
	localOnly bool
}

// libraries are the contestants, in table order.
func libraries() []library {
	return []library{
		{name: "cacheguard", open: openCacheguard, local: true, crossProcess: true, nullCache: true, cluster: true, sentinel: true},
		{name: "go-zero", open: openGoZero, nullCache: true},
		{name: "rockscache", open: openRocks, crossProcess: true, nullCache: true, sentinel: true},
		{name: "gocache", open: openGocache, local: true, sentinel: true},
		{name: "go-redis-cache", open: openGoRedisCache, local: true, sentinel: true},
		{name: "jetcache", open: openJetcache, local: true, nullCache: true, sentinel: true},
		{name: "rueidis", open: openRueidis, local: true, cluster: true, sentinel: true},
		{name: "rueidisaside", open: openRueidisAside, local: true, crossProcess: true, nullCache: true, cluster: true, sentinel: true},
		{name: "sturdyc", open: openSturdyc, local: true, nullCache: true, cluster: true, sentinel: true, localOnly: true},
		{name: "go-redis", open: openNaive, cluster: true, sentinel: true},
	}
}

// tierLibraries are the contestants of a row whose local tiers are on
// (tier "local": the libraries that have one, named with "+local") or off
// (tier "none": those whose tier can be turned off), among those can
// accepts (nil: all).
func tierLibraries(tier string, can func(library) bool) (libs []library, names []string) {
	for _, lib := range libraries() {
		if (can != nil && !can(lib)) || (tier == "local" && !lib.local) || (tier == "none" && lib.localOnly) {
			continue
		}
		libs = append(libs, lib)
		name := lib.name
		if tier == "local" {
			name += "+local"
		}
		names = append(names, name)
	}
	return libs, names
}

// remoteLibraries are the contestants of the rows without a local tier:
// every library whose in-process tier can be turned off.
func remoteLibraries() []library {
	var out []library
	for _, l := range libraries() {
		if !l.localOnly {
			out = append(out, l)
		}
	}
	return out
}

// libraryByName finds a library (child processes get its name).
func libraryByName(name string) (library, bool) {
	for _, l := range libraries() {
		if l.name == name {
			return l, true
		}
	}
	return library{}, false
}

// roundTrips returns a function that reports the round trips since it was
// made.
func (c *cacheImpl) roundTrips() func() uint64 {
	start := c.rt.load()
	return func() uint64 { return c.rt.load() - start }
}
