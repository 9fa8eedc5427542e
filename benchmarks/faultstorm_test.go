package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Storms under faults: faultGoroutines readers read faultKeys rows, all
// cached, through one instance of a library while a writer updates rows in
// the database and invalidates them through a second instance on the same
// prefix, every faultWriteGap; in the middle of it the server restarts
// empty, is flushed, or fails over to its replica (faults_test.go). Every
// call is bounded by a context deadline, and abandoned faultHangGrace after
// it: a library that hangs shows as hung reads and "did not recover", not as
// a hung benchmark.
const (
	faultKeys       = 2000
	faultGoroutines = 64
	faultLatency    = time.Millisecond
	faultBefore     = time.Second     // storm before the fault
	faultAfter      = 2 * time.Second // storm after the fault is over
	faultGetTimeout = 500 * time.Millisecond
	faultHangGrace  = time.Second
	faultBucket     = 100 * time.Millisecond
	faultWriteGap   = 10 * time.Millisecond
	faultLocalTTL   = time.Second
	// faultCleanTail is how many buckets at the end of a storm must have
	// no failed read, each with at least a tenth of the reads of a bucket
	// before the fault, for the library to have recovered by itself.
	faultCleanTail = 3
)

// BenchmarkFaultStorm runs the storm of every library under every fault,
// local tiers off (tier=none) and on (tier=local: the libraries that have
// one, fresh for faultLocalTTL; cacheguard's admits every key). The
// libraries take turns, one storm each per round, on a fresh prefix.
// Per storm: loads-per-key (database loads during the storm over the rows;
// each invalidation costs a load too), failed-reads and hung-reads (of
// about 10^5 reads), stale-reads (a read that started after an
// invalidation returned and still got the older row), stale-rows-left
// (rows a new instance reads older than that once the storm is over: what
// the storm left in Redis), recovered (1 when the storm ended on
// faultCleanTail clean buckets, else 0), recovery-ms (from the fault's
// start to the first of the clean buckets that end the storm, when it
// recovered) and, for a failover, split-ms (how long the demoted master
// went on as a master after the promotion: the writes it acknowledged
// meanwhile are lost).
func BenchmarkFaultStorm(b *testing.B) {
	for _, fault := range faultNames {
		for _, tier := range []string{"none", "local"} {
			b.Run("fault="+fault+"/tier="+tier, func(b *testing.B) {
				env := startFault(b, fault)
				libs, names := tierLibraries(tier, env.can)
				keys := scaled(faultKeys, 100)
				samples := newSamples(len(libs))
				// One round per pass: a round of every library takes
				// tens of seconds, and run.sh's passes give the samples.
				// Each pass starts with a library of its own drawing,
				// so that none is always first.
				first := rand.IntN(len(libs))
				for i := 0; b.Loop(); i++ {
					takeTurns(samples, first+i, func(l int) roundMetrics {
						cfg := implConfig{db: newSimDB(keys, faultLatency, 0).withVersions(),
							prefix: "fault:" + names[l] + ":" + nonce() + ":", ttl: 10 * time.Minute, nullTTL: time.Minute}
						if tier == "local" {
							cfg.local, cfg.localEntries, cfg.localTTL, cfg.admitAll = true, keys, faultLocalTTL, true
						}
						env.point(&cfg)
						if env.prepare != nil {
							env.prepare()
						}
						return faultStorm(b, libs[l], cfg, env).metrics(keys)
					})
				}
				reportRounds(b, names, samples)
			})
		}
	}
}

// faultResult is one library's storm under a fault.
type faultResult struct {
	loads, reads, failed, hung, stale int64
	// staleLeft counts the rows a fresh instance read older than their
	// newest invalidated version once the storm was over.
	staleLeft int64
	recovered bool
	recovery  time.Duration
	// split is how long the demoted master went on as a master after the
	// promotion (failover only).
	split time.Duration
	// failover: the fault was a failover (split is reported).
	failover bool
}

func (f faultResult) metrics(keys int) roundMetrics {
	m := roundMetrics{
		"loads-per-key":   float64(f.loads) / float64(keys),
		"failed-reads":    float64(f.failed),
		"hung-reads":      float64(f.hung),
		"stale-reads":     float64(f.stale),
		"stale-rows-left": float64(f.staleLeft),
		"recovered":       0,
	}
	if f.recovered {
		m["recovered"] = 1
		m["recovery-ms"] = float64(f.recovery) / float64(time.Millisecond)
	}
	if f.failover {
		m["split-ms"] = float64(f.split) / float64(time.Millisecond)
	}
	return m
}

// faultStorm runs one storm: warm the rows, read and write, inject the
// fault after faultBefore, go on for faultAfter once it is over.
func faultStorm(b *testing.B, lib library, cfg implConfig, env faultEnv) faultResult {
	reader, writer := lib.open(b, cfg), lib.open(b, cfg)
	defer func() {
		closeBounded(reader)
		closeBounded(writer)
	}()
	db, keys, names := cfg.db, cfg.db.rows, keyNames()
	var warmErr atomic.Value
	parallel(32, keys, func(i int) {
		if _, err := boundedCall(stormGetTimeout, func(ctx context.Context) (row, error) { return reader.get(ctx, names[i]) }); err != nil {
			warmErr.Store(err)
		}
	})
	if err, ok := warmErr.Load().(error); ok {
		b.Fatalf("%s: warming up: %v", lib.name, err)
	}
	db.reset()

	// committed[k] is the newest version of row k whose invalidation has
	// returned.
	committed := make([]atomic.Int64, keys)
	var res faultResult
	var tl faultTimeline
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for g := range faultGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 41))
			for !stop.Load() {
				k := r.IntN(keys)
				want := committed[k].Load()
				t := time.Now()
				got, err := boundedCall(faultGetTimeout, func(ctx context.Context) (row, error) { return reader.get(ctx, names[k]) })
				atomic.AddInt64(&res.reads, 1)
				switch {
				case errors.Is(err, errHung):
					atomic.AddInt64(&res.hung, 1)
				case err != nil:
					atomic.AddInt64(&res.failed, 1)
				case got.Version < want:
					atomic.AddInt64(&res.stale, 1)
				}
				tl.add(t.Sub(start), err == nil)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(7, 43))
		for !stop.Load() {
			k := r.IntN(keys)
			v := db.update(k)
			if _, err := boundedCall(faultGetTimeout, func(ctx context.Context) (struct{}, error) { return struct{}{}, writer.del(ctx, names[k]) }); err == nil {
				for old := committed[k].Load(); old < v && !committed[k].CompareAndSwap(old, v); old = committed[k].Load() {
				}
			}
			time.Sleep(faultWriteGap)
		}
	}()
	before, after := faultBefore, faultAfter
	if quick() {
		before, after = 200*time.Millisecond, 400*time.Millisecond
	}
	time.Sleep(before)
	faultAt := time.Since(start)
	res.split = env.inject()
	res.failover = env.splits
	time.Sleep(after)
	stop.Store(true)
	wg.Wait()
	res.loads = db.queries.Load()
	res.recovered, res.recovery = tl.recovery(faultAt)
	res.staleLeft = staleRowsLeft(b, lib, cfg, committed)
	if testing.Verbose() {
		b.Logf("%s: fault at %v (split %v); stale reads %d, rows left stale %d; reads per %v: %v", lib.name, faultAt.Round(time.Millisecond),
			res.split.Round(time.Millisecond), res.stale, res.staleLeft, faultBucket, &tl)
	}
	return res
}

// faultTimeline counts successful and failed reads per faultBucket, by the
// time they started.
type faultTimeline struct {
	mu       sync.Mutex
	ok, fail []int
}

func (t *faultTimeline) add(at time.Duration, ok bool) {
	i := int(at / faultBucket)
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.ok) <= i {
		t.ok, t.fail = append(t.ok, 0), append(t.fail, 0)
	}
	if ok {
		t.ok[i]++
	} else {
		t.fail[i]++
	}
}

// recovery finds the clean buckets that end the storm (no failed read, at
// least a tenth of the reads of a bucket before the fault) and says
// whether there are faultCleanTail of them after the fault, and how long
// after faultAt the first of them started.
func (t *faultTimeline) recovery(faultAt time.Duration) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// The last bucket is cut short by the end of the storm: leave it out.
	n := len(t.ok) - 1
	before := int(faultAt / faultBucket)
	base := 0.0
	for i := 1; i < before && i < n; i++ {
		base += float64(t.ok[i])
	}
	if before > 1 {
		base /= float64(before - 1)
	}
	first := n
	for i := n - 1; i >= before; i-- {
		if t.fail[i] > 0 || float64(t.ok[i]) < base/10 {
			break
		}
		first = i
	}
	if n-first < faultCleanTail {
		return false, 0
	}
	return true, max(0, time.Duration(first)*faultBucket-faultAt)
}

// String is for the verbose log of a storm.
func (t *faultTimeline) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("ok %v fail %v", t.ok, t.fail)
}

// staleRowsLeft reads every row through a new instance of the library (its
// local tier, if any, empty) and counts those older than the newest version
// whose invalidation returned: what the storm left in Redis. A delete Redis
// acknowledged and then lost leaves its row there until it is written again.
func staleRowsLeft(b *testing.B, lib library, cfg implConfig, committed []atomic.Int64) int64 {
	c := lib.open(b, cfg)
	defer closeBounded(c)
	names := keyNames()
	var left atomic.Int64
	parallel(32, len(committed), func(k int) {
		got, err := boundedCall(faultGetTimeout, func(ctx context.Context) (row, error) { return c.get(ctx, names[k]) })
		if err == nil && got.Version < committed[k].Load() {
			left.Add(1)
		}
	})
	return left.Load()
}
