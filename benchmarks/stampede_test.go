package benchmarks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The stampede: one hot key expires while many readers want it. Each op is one
// stampede on a key absent from Redis (as after its expiry), read by
// stampedeReaders goroutines in each of procs processes at the same instant;
// the op ends when every reader has its row. Every op uses a key of its own
// (row r for op r, under a prefix new to each run), so a late write from one
// op cannot leak into the next. The database answers
// in stampedeLatency, through stampedeConns connections per process.
const (
	stampedeReaders = 200
	stampedeProcs   = 3
	stampedeLatency = 20 * time.Millisecond
	stampedeConns   = 32
	stampedeTimeout = 30 * time.Second
)

// Variables of the child processes' environment.
const (
	childRunEnv    = "CACHEGUARD_BENCH_STAMPEDE"
	childImplEnv   = "CACHEGUARD_BENCH_IMPL"
	childIDEnv     = "CACHEGUARD_BENCH_CHILD"
	childPrefixEnv = "CACHEGUARD_BENCH_PREFIX"
)

// BenchmarkStampede runs the stampede with all readers in this process
// (procs=1: in-process deduplication is enough) and spread over separate
// processes (procs=3: the test binary re-executed; only a lock or lease in
// Redis keeps it to one load). The libraries take turns, one stampede each
// per iteration (see interleaved): db-loads/op is the number of database
// queries per stampede (1 is ideal); slowest-read-ms is the slowest reader's
// wait; all are medians over the stampedes of a run.
func BenchmarkStampede(b *testing.B) {
	libs := remoteLibraries()
	names := make([]string, len(libs))
	for i, l := range libs {
		names[i] = l.name
	}
	for _, procs := range []int{1, stampedeProcs} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			rounds := make([]int, len(libs))
			var run []func(key string) roundResult
			for _, lib := range libs {
				prefix := "stampede:" + lib.name + ":" + nonce() + ":"
				if procs == 1 {
					db := newSimDB(zipfKeys, stampedeLatency, stampedeConns)
					c := lib.open(b, stampedeConfig(db, prefix))
					b.Cleanup(c.close)
					run = append(run, func(key string) roundResult {
						rts := c.roundTrips()
						r := stampedeRound(c, db, key, stampedeReaders)
						r.roundTrips = int64(rts())
						return r
					})
					continue
				}
				kids := startChildren(b, newClient(b), lib.name, prefix, procs)
				b.Cleanup(func() { kids.stop(b) })
				run = append(run, func(key string) roundResult { return kids.round(b, key) })
			}
			b.ResetTimer()
			interleaved(b, names, func(l int) roundMetrics {
				key := strconv.Itoa(rounds[l] % zipfKeys)
				rounds[l]++
				return run[l](key).metrics()
			})
		})
	}
}

func stampedeConfig(db *simDB, prefix string) implConfig {
	return implConfig{db: db, prefix: prefix, ttl: time.Hour, nullTTL: time.Minute}
}

// roundResult is one stampede's outcome.
type roundResult struct {
	loads, errs, roundTrips int64
	slowest                 time.Duration
}

func (r roundResult) metrics() roundMetrics {
	return roundMetrics{
		"db-loads/op":         float64(r.loads),
		"failed-reads/op":     float64(r.errs),
		"redis-roundtrips/op": float64(r.roundTrips),
		"slowest-read-ms":     float64(r.slowest) / float64(time.Millisecond),
	}
}

// nonce returns a random string, to make key prefixes unique to a run.
func nonce() string {
	var id [6]byte
	rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

// stampedeRound starts n readers of key at once and waits for all of them.
// Their reads share one deadline, stampedeTimeout away: a reader left
// waiting for a wake-up that never comes fails the round instead of
// hanging it.
func stampedeRound(c *cacheImpl, db *simDB, key string, n int) roundResult {
	ctx, cancel := context.WithTimeout(context.Background(), stampedeTimeout)
	defer cancel()
	loads := db.queries.Load()
	gate := make(chan struct{})
	var wg sync.WaitGroup
	var errs atomic.Int64
	var slowest atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			start := time.Now()
			if _, err := c.get(ctx, key); err != nil {
				errs.Add(1)
			}
			d := int64(time.Since(start))
			for {
				s := slowest.Load()
				if d <= s || slowest.CompareAndSwap(s, d) {
					break
				}
			}
		}()
	}
	close(gate)
	wg.Wait()
	return roundResult{loads: db.queries.Load() - loads, errs: errs.Load(), slowest: time.Duration(slowest.Load())}
}

// children are processes running stampede rounds on command, coordinated
// through Redis lists: "go:<i>" tells child i to run a round (or stop),
// "done" collects their results.
type children struct {
	ctl  *redis.Client
	run  string
	cmds []*exec.Cmd
	out  syncBuffer // the children's output, shown if one fails

	stopped bool
}

// syncBuffer is a bytes.Buffer several processes' output can be copied into.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startChildren(b *testing.B, ctl *redis.Client, impl, prefix string, n int) *children {
	k := &children{ctl: ctl, run: "stampede-run:" + nonce() + ":"}
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStampedeChild$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			childRedisEnv+"="+redisAddr(b),
			childRunEnv+"="+k.run,
			childImplEnv+"="+impl,
			childPrefixEnv+"="+prefix,
			childIDEnv+"="+strconv.Itoa(i))
		cmd.Stdout, cmd.Stderr = &k.out, &k.out
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		k.cmds = append(k.cmds, cmd)
	}
	b.Cleanup(func() {
		for _, c := range k.cmds {
			if c.ProcessState == nil {
				c.Process.Kill()
				c.Wait()
			}
		}
	})
	for range n {
		if err := ctl.BLPop(context.Background(), 30*time.Second, k.run+"ready").Err(); err != nil {
			b.Fatalf("child not ready: %v\n%s", err, k.out.String())
		}
	}
	return k
}

// round runs one stampede on key in every child at once and adds up their
// results.
func (k *children) round(b *testing.B, key string) roundResult {
	ctx := context.Background()
	for i := range k.cmds {
		k.ctl.RPush(ctx, k.run+"go:"+strconv.Itoa(i), key)
	}
	var total roundResult
	for range k.cmds {
		kv, err := k.ctl.BLPop(ctx, 30*time.Second, k.run+"done").Result()
		if err != nil {
			b.Fatalf("child round: %v\n%s", err, k.out.String())
		}
		var r roundResult
		var slowest int64
		if _, err := fmt.Sscan(kv[1], &r.loads, &r.errs, &r.roundTrips, &slowest); err != nil {
			b.Fatalf("child result %q: %v", kv[1], err)
		}
		r.slowest = time.Duration(slowest)
		// The op waits for the slowest reader of all processes.
		total.loads += r.loads
		total.errs += r.errs
		total.roundTrips += r.roundTrips
		total.slowest = max(total.slowest, r.slowest)
	}
	return total
}

func (k *children) stop(b *testing.B) {
	if k.stopped {
		return
	}
	k.stopped = true
	ctx := context.Background()
	for i := range k.cmds {
		k.ctl.RPush(ctx, k.run+"go:"+strconv.Itoa(i), "stop")
	}
	for _, c := range k.cmds {
		if err := c.Wait(); err != nil {
			b.Errorf("child: %v\n%s", err, k.out.String())
		}
	}
}

// TestStampedeChild is the body of a stampede child process; it is skipped
// unless a BenchmarkStampede started this process.
func TestStampedeChild(t *testing.T) {
	run := os.Getenv(childRunEnv)
	if run == "" {
		t.Skip("runs only as a child of BenchmarkStampede")
	}
	lib, ok := libraryByName(os.Getenv(childImplEnv))
	if !ok {
		t.Fatalf("unknown library %q", os.Getenv(childImplEnv))
	}
	ctx := context.Background()
	ctl := newClient(t)
	db := newSimDB(zipfKeys, stampedeLatency, stampedeConns)
	c := lib.open(t, stampedeConfig(db, os.Getenv(childPrefixEnv)))
	defer c.close()
	ctl.RPush(ctx, run+"ready", os.Getenv(childIDEnv))
	for {
		kv, err := ctl.BLPop(ctx, time.Minute, run+"go:"+os.Getenv(childIDEnv)).Result()
		if err != nil {
			t.Fatalf("waiting for the parent: %v", err)
		}
		if kv[1] == "stop" {
			return
		}
		rts := c.roundTrips()
		r := stampedeRound(c, db, kv[1], stampedeReaders)
		ctl.RPush(ctx, run+"done", fmt.Sprint(r.loads, r.errs, rts(), int64(r.slowest)))
	}
}
