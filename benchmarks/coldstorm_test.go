package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The cold storm: after a Redis restart, a Clear or a deploy, every key
// misses at once. stormKeys rows, none of them cached, are read uniformly by
// 64 or 256 goroutines; the database answers in stormLatency with no cap on
// connections. The reads are a fixed sequence in which every key appears
// stormReadsPerKey times in random order (the same sequence for every
// library), so that a library that loads each key once makes exactly
// stormKeys loads. The same sequence is then read again, warm, for the
// cold/warm ratio.
const (
	stormKeys        = 10_000
	stormReadsPerKey = 3
	stormLatency     = time.Millisecond
	stormLocalTTL    = 5 * time.Second
	stormGetTimeout  = 5 * time.Second
)

var stormGoroutines = []int{64, 256}

// BenchmarkColdStorm runs the storm with local tiers off on every side
// (tier=none: every library that can run without one) and on on every side
// (tier=local: the libraries that have one, each with room for every key,
// fresh for stormLocalTTL; cacheguard's tier admits every key, since a
// uniform storm has no hot keys). The libraries take turns, one storm each
// per round (interleave_test.go), each on a fresh prefix. Per storm:
// gets/s and warm-gets/s (the same reads once every key is cached), their
// ratio cold/warm, loads-per-key (1 for a library that loads each key
// once), cmds-per-key and roundtrips-per-key (what the storm cost beyond
// the warm reads of the same sequence, per key: cold − warm × (reads − keys)
// / reads, over keys), p50-us and p99-us of the cold reads, failed-reads.
func BenchmarkColdStorm(b *testing.B) {
	for _, tier := range []string{"none", "local"} {
		libs, names := tierLibraries(tier, nil)
		for _, g := range stormGoroutines {
			b.Run(fmt.Sprintf("tier=%s/g=%d", tier, g), func(b *testing.B) {
				keys := scaled(stormKeys, 200)
				seq := stormSequence(keys, stormReadsPerKey)
				interleaved(b, names, func(l int) roundMetrics {
					cfg := stormConfig(newSimDB(keys, stormLatency, 0), "storm:"+names[l]+":"+nonce()+":", tier == "local", keys)
					return coldStorm(b, libs[l], cfg, seq, g).metrics()
				})
			})
		}
	}
}

// stormConfig is the cold storm's configuration of a library.
func stormConfig(db *simDB, prefix string, local bool, keys int) implConfig {
	cfg := implConfig{db: db, prefix: prefix, ttl: 10 * time.Minute, nullTTL: time.Minute}
	if local {
		cfg.local, cfg.localEntries, cfg.localTTL, cfg.admitAll = true, keys, stormLocalTTL, true
	}
	return cfg
}

// stormSequence returns the read sequence of a storm over keys keys: each
// key perKey times, shuffled with a fixed seed.
func stormSequence(keys, perKey int) []string {
	names := keyNames()
	seq := make([]string, 0, keys*perKey)
	for range perKey {
		seq = append(seq, names[:keys]...)
	}
	r := rand.New(rand.NewPCG(37, uint64(keys)))
	r.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	return seq
}

// stormResult is one library's storm.
type stormResult struct {
	keys, reads       int
	cold, warm        phaseResult
	loads             int64
	coldCmds, coldRTs uint64
	warmCmds, warmRTs uint64
}

func (s stormResult) metrics() roundMetrics {
	m := roundMetrics{
		"gets/s":        s.cold.perSec,
		"warm-gets/s":   s.warm.perSec,
		"loads-per-key": float64(s.loads) / float64(s.keys),
		"p50-us":        float64(s.cold.p50) / float64(time.Microsecond),
		"p99-us":        float64(s.cold.p99) / float64(time.Microsecond),
		"failed-reads":  float64(s.cold.errs + s.warm.errs),
	}
	if s.warm.perSec > 0 {
		m["cold/warm"] = s.cold.perSec / s.warm.perSec
	}
	// What the misses cost beyond a warm read of the same sequence.
	hits := float64(s.reads-s.keys) / float64(s.reads)
	m["cmds-per-key"] = (float64(s.coldCmds) - float64(s.warmCmds)*hits) / float64(s.keys)
	m["roundtrips-per-key"] = (float64(s.coldRTs) - float64(s.warmRTs)*hits) / float64(s.keys)
	return m
}

// coldStorm opens the library on a fresh prefix, reads seq cold and then
// warm from g goroutines, and removes its keys.
func coldStorm(b *testing.B, lib library, cfg implConfig, seq []string, g int) stormResult {
	c := lib.open(b, cfg)
	defer func() {
		c.close()
		dropPrefix(b, cfg, cfg.prefix)
	}()
	res := stormResult{keys: cfg.db.rows, reads: len(seq)}
	cmds, rts := c.rt.commands(), c.rt.load()
	res.cold = readPhase(c, seq, g)
	res.coldCmds, res.coldRTs = c.rt.commands()-cmds, c.rt.load()-rts
	cmds, rts = c.rt.commands(), c.rt.load()
	res.warm = readPhase(c, seq, g)
	res.warmCmds, res.warmRTs = c.rt.commands()-cmds, c.rt.load()-rts
	res.loads = cfg.db.queries.Load()
	return res
}

// phaseResult is one pass over a read sequence.
type phaseResult struct {
	perSec   float64
	p50, p99 time.Duration
	errs     int64
}

// readPhase reads seq from g goroutines, each Get bounded by
// stormGetTimeout, and measures it.
func readPhase(c *cacheImpl, seq []string, g int) phaseResult {
	var next, errs atomic.Int64
	lat := make([][]time.Duration, g)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, len(seq)/g+1)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(seq) {
					break
				}
				ctx, cancel := context.WithTimeout(context.Background(), stormGetTimeout)
				t := time.Now()
				_, err := c.get(ctx, seq[i])
				mine = append(mine, time.Since(t))
				cancel()
				if err != nil {
					errs.Add(1)
				}
			}
			lat[w] = mine
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	res := phaseResult{errs: errs.Load(), perSec: float64(len(all)) / elapsed.Seconds()}
	if len(all) > 0 {
		res.p50, res.p99 = all[(len(all)-1)/2], all[(len(all)-1)*99/100]
	}
	return res
}

// dropPrefix removes every key under prefix from the library's server, so
// that rounds on fresh prefixes do not pile up in Redis.
func dropPrefix(tb testing.TB, cfg implConfig, prefix string) {
	rdb, _ := cfg.plainClient(tb)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			rdb.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		rdb.Unlink(ctx, batch...)
	}
}
