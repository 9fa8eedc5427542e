package benchmarks

import (
	"context"
	"fmt"
	"math/rand"
	randv2 "math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Concurrency curves: the Redis-hit path of every library at a growing
// number of goroutines, over curveRows rows already in Redis, read
// uniformly or along a zipfian trace. A cell is one library at one
// (distribution, goroutines) point, run for curveCell; a cell's
// sub-benchmark runs rounds of one cell of every library, taking turns
// (interleave_test.go), so that all of them see the same stretch of the
// machine, and reports the medians over the rounds and the paired ratios.
// Several short rounds rather than one long one: a slow second of a shared
// machine then moves one round of every library alike instead of the one
// library it fell on. Each reports reads/s and the p99 latency of its reads
// in µs.

// curveRows is how many rows the curves read.
const curveRows = 10_000

var (
	curveGoroutines        = []int{1, 8, 16, 64, 256, 1024}
	curveClusterGoroutines = []int{64, 256}
	curveDists             = []string{"uniform", "zipfian"}
)

// curveCell is how long one library runs in one round of a cell (a pass
// runs minRounds of them).
func curveCell() time.Duration {
	if quick() {
		return 10 * time.Millisecond
	}
	return 200 * time.Millisecond
}

// curveRowCount is the number of rows read (fewer in a quick run, which
// fills Redis for every library).
func curveRowCount() int { return scaled(curveRows, 200) }

// contestant is one library in the curves.
type contestant struct {
	name string
	c    *cacheImpl
}

// BenchmarkCurve measures Redis-hit throughput and p99 against goroutines
// on the shared redis-server: go-redis GET + json.Unmarshal through its
// connection pool, the same through go-redis's AutoPipeliner, and every
// library of the peer tables without a local tier.
func BenchmarkCurve(b *testing.B) {
	libs := curveContestants(b, nil)
	for _, dist := range curveDists {
		for _, g := range curveGoroutines {
			b.Run(fmt.Sprintf("dist=%s/g=%d", dist, g), func(b *testing.B) { runCurve(b, libs, dist, g) })
		}
	}
}

// BenchmarkCurveCluster is the 64- and 256-goroutine cells of
// BenchmarkCurve on a 3-master Redis Cluster, for the libraries whose
// adapters run on one.
func BenchmarkCurveCluster(b *testing.B) {
	cl, _ := redistest.StartCluster(b)
	libs := curveContestants(b, cl.Addrs())
	for _, dist := range curveDists {
		for _, g := range curveClusterGoroutines {
			b.Run(fmt.Sprintf("dist=%s/g=%d", dist, g), func(b *testing.B) { runCurve(b, libs, dist, g) })
		}
	}
}

// curveContestants opens the baselines and the libraries (on the cluster
// when cluster is set), each with the curve's rows in Redis.
func curveContestants(b *testing.B, cluster []string) []contestant {
	db := newSimDB(curveRows, 0, 0)
	cfg := func(name string) implConfig {
		c := remoteConfig(db, "curve:"+name+":")
		c.cluster = cluster
		return c
	}
	var out []contestant
	add := func(name string, c *cacheImpl, cfg implConfig) {
		b.Cleanup(c.close)
		fillCurve(b, c, cfg)
		out = append(out, contestant{name, c})
	}
	raw := cfg("go-redis-GET+json")
	rdb, rt := raw.client(b)
	add("go-redis-GET+json", cacheAside(rdb, rt, raw), raw)
	ap, err := autoPipeliner(rdb)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ap.Close() })
	add("go-redis-autopipeline", cacheAside(ap, rt, raw), raw)
	for _, lib := range remoteLibraries() {
		if lib.name == "go-redis" || (cluster != nil && !lib.cluster) {
			continue // go-redis: the GET+json row above
		}
		c := cfg(lib.name)
		add(lib.name, lib.open(b, c), c)
	}
	return out
}

// autoPipeliner returns go-redis's AutoPipeliner (its defaults) of rdb.
func autoPipeliner(rdb redis.UniversalClient) (*redis.AutoPipeliner, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.AutoPipeline()
	case *redis.ClusterClient:
		return c.AutoPipeline()
	}
	return nil, fmt.Errorf("no AutoPipeliner for %T", rdb)
}

// fillCurve stores the curve's rows through the library's own Set, once
// per prefix and server (run.sh keeps one server for all its passes: a
// marker says the rows are there).
func fillCurve(b *testing.B, c *cacheImpl, cfg implConfig) {
	ctx := context.Background()
	rows := curveRowCount()
	ctl, _ := cfg.client(b)
	marker := fmt.Sprintf("%sfilled:%d", cfg.prefix, rows)
	if ctl.Exists(ctx, marker).Val() == 1 {
		return
	}
	// 8 writers, and a few tries per row: go-zero's circuit breaker opens
	// on a burst of slow writes on a busy machine.
	var failed atomic.Value
	parallel(8, rows, func(i int) {
		var err error
		for try := range 5 {
			if err = c.set(ctx, keyNames()[i], makeRow(i)); err == nil {
				return
			}
			time.Sleep(time.Duration(try+1) * 100 * time.Millisecond)
		}
		failed.Store(err)
	})
	if err, ok := failed.Load().(error); ok {
		b.Fatalf("filling %s: %v", cfg.prefix, err)
	}
	if err := ctl.Set(ctx, marker, 1, time.Hour).Err(); err != nil {
		b.Fatal(err)
	}
}

// curveZipf is a zipfian trace (s = 1.1) over curveRows rows.
var curveZipf = sync.OnceValue(func() []int32 {
	z := rand.NewZipf(rand.New(rand.NewSource(2)), zipfS, 1, curveRows-1)
	t := make([]int32, 1<<16)
	for i := range t {
		t[i] = int32(z.Uint64())
	}
	return t
})

// runCurve runs one cell of every library: rounds of one cell each, taking
// turns.
func runCurve(b *testing.B, libs []contestant, dist string, g int) {
	names := make([]string, len(libs))
	for i, l := range libs {
		names[i] = l.name
	}
	interleaved(b, names, func(l int) roundMetrics {
		res := runCell(libs[l].c.get, g, curveCell(), curveKeys(dist))
		if res.errs > 0 {
			b.Fatalf("%s: %d of %d reads failed: %v", libs[l].name, res.errs, res.reads, res.err)
		}
		return roundMetrics{"reads/s": res.perSec, "p99-us": res.p99.Seconds() * 1e6}
	})
}

// curveKeys returns, for goroutine w, the function giving the key of its
// i-th read.
func curveKeys(dist string) func(w int) func() string {
	rows, names := curveRowCount(), keyNames()
	if dist == "zipfian" {
		trace := curveZipf()
		return func(w int) func() string {
			i := w * 7919
			return func() string {
				i++
				return names[int(trace[i%len(trace)])%rows]
			}
		}
	}
	return func(w int) func() string {
		rng := randv2.New(randv2.NewPCG(uint64(w), 1))
		return func() string { return names[rng.IntN(rows)] }
	}
}

// cellResult is what one library did in one cell.
type cellResult struct {
	reads, errs int64
	err         error   // one of the errors
	perSec      float64 // reads per second
	p99         time.Duration
	allocs      float64       // heap allocations per read, in the whole process
	cpu         time.Duration // CPU time of the whole process (user + system) while reading
}

// runCell runs get from g goroutines for d and measures it.
func runCell(get func(context.Context, string) (row, error), g int, d time.Duration, keys func(w int) func() string) cellResult {
	ctx := context.Background()
	lat := make([][]time.Duration, g)
	var errs atomic.Int64
	var firstErr atomic.Value
	var stop atomic.Bool
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := keys(w)
			mine := make([]time.Duration, 0, 256)
			<-start
			for !stop.Load() {
				t := time.Now()
				if _, err := get(ctx, key()); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				mine = append(mine, time.Since(t))
			}
			lat[w] = mine
		}()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := processCPU()
	t0 := time.Now()
	close(start)
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(t0)
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&after)
	all := slices.Concat(lat...)
	res := cellResult{reads: int64(len(all)), errs: errs.Load(), cpu: cpu}
	if err, ok := firstErr.Load().(error); ok {
		res.err = err
	}
	if len(all) > 0 {
		slices.Sort(all)
		res.p99 = all[(len(all)-1)*99/100]
		res.perSec = float64(len(all)) / elapsed.Seconds()
		res.allocs = float64(after.Mallocs-before.Mallocs) / float64(len(all))
	}
	return res
}
