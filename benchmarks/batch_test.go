package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The read batcher measured here is the smallest form of batching Redis
// reads a read engine could own: while a read is in flight to the node, the
// next ones queue; when it returns, the queue goes out as one pipeline, and
// so on while reads keep coming. A lone caller sends its GET at once, so a
// serial read stays one plain round trip. BenchmarkBatchRead compares it
// with go-redis's connection pool and with go-redis's AutoPipeliner, on
// the same node and the same rows, libraries taking turns in each cell.

// batcher batches GETs to one node. Set and Del go to the client as they
// are.
type batcher struct {
	*redis.Client
	mu       sync.Mutex
	inFlight bool
	queue    []*queuedGet
}

// queuedGet is a GET waiting for the batch in flight to return.
type queuedGet struct {
	cmd  *redis.StringCmd
	done chan struct{}
}

// Get sends the GET at once when nothing is in flight, else queues it for
// the next batch. A caller whose context ends while it waits returns at
// once; its GET still goes out with its batch, its reply dropped.
func (b *batcher) Get(ctx context.Context, key string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx, "get", key)
	b.mu.Lock()
	if b.inFlight {
		q := &queuedGet{cmd: cmd, done: make(chan struct{})}
		b.queue = append(b.queue, q)
		b.mu.Unlock()
		select {
		case <-q.done:
			return cmd
		case <-ctx.Done():
			res := redis.NewStringCmd(ctx, "get", key)
			res.SetErr(ctx.Err())
			return res
		}
	}
	b.inFlight = true
	b.mu.Unlock()
	_ = b.Client.Process(ctx, cmd) // the error is the command's
	b.next()
	return cmd
}

// next sends the queued GETs as one pipeline from a new goroutine, or
// marks the node idle when none is queued.
func (b *batcher) next() {
	b.mu.Lock()
	q := b.queue
	b.queue = nil
	if len(q) == 0 {
		b.inFlight = false
	}
	b.mu.Unlock()
	if len(q) > 0 {
		go b.flush(q)
	}
}

// flush sends a batch as one pipeline, bounded by the client's read and
// write timeouts rather than by any one caller's context (a batch serves
// several), wakes its callers and goes on with the next batch.
func (b *batcher) flush(q []*queuedGet) {
	p := b.Client.Pipeline()
	for _, g := range q {
		_ = p.Process(context.Background(), g.cmd) // queued, not sent
	}
	_, _ = p.Exec(context.Background()) // each command keeps its own error
	for _, g := range q {
		close(g.done)
	}
	b.next()
}

// BenchmarkBatchRead measures reads of rows already in Redis (GET and
// json.Unmarshal, uniform over the curve's rows) at 1, 64 and 256
// goroutines: through go-redis's pool, its AutoPipeliner and the batcher
// above. Besides reads/s and p99 it reports the process's heap allocations
// per read (allocs-per-read, everything in the process counted).
func BenchmarkBatchRead(b *testing.B) {
	db := newSimDB(curveRows, 0, 0)
	cfg := remoteConfig(db, "curve:go-redis-GET+json:") // the curve's rows
	rdb, rt := countedClient(b)
	pool := cacheAside(rdb, rt, cfg)
	fillCurve(b, pool, cfg)
	ap, err := rdb.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ap.Close() })
	libs := []contestant{
		{"go-redis-pool", pool},
		{"go-redis-autopipeline", cacheAside(ap, rt, cfg)},
		{"batcher", cacheAside(&batcher{Client: rdb}, rt, cfg)},
	}
	names := []string{libs[0].name, libs[1].name, libs[2].name}
	for _, g := range []int{1, 64, 256} {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			interleaved(b, names, func(l int) roundMetrics {
				res := runCell(libs[l].c.get, g, curveCell(), curveKeys("uniform"))
				if res.errs > 0 {
					b.Fatalf("%s: %d of %d reads failed: %v", libs[l].name, res.errs, res.reads, res.err)
				}
				return roundMetrics{"reads/s": res.perSec, "p99-us": res.p99.Seconds() * 1e6, "allocs-per-read": res.allocs}
			})
		})
	}
}

// The batcher returns every caller its own reply, under concurrency: a
// value, a miss, or the error of its own command (WRONGTYPE) while the
// others in its batch succeed; a caller whose context ends while it waits
// returns the context's error.
func TestBatcher(t *testing.T) {
	ctx := context.Background()
	rdb := newClient(t)
	const n = 64
	for i := range n {
		rdb.Set(ctx, fmt.Sprintf("batcher:%d", i), i, 0)
	}
	rdb.HSet(ctx, "batcher:hash", "f", "v")
	rdb.Del(ctx, "batcher:none")
	bt := &batcher{Client: rdb}
	var wg sync.WaitGroup
	for r := range 3 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i := r % n; i {
			case n - 1:
				if err := bt.Get(ctx, "batcher:hash").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
					t.Errorf("a hash: %v, want WRONGTYPE", err)
				}
			case n - 2:
				if err := bt.Get(ctx, "batcher:none").Err(); !errors.Is(err, redis.Nil) {
					t.Errorf("a missing key: %v, want redis.Nil", err)
				}
			default:
				if v, err := bt.Get(ctx, fmt.Sprintf("batcher:%d", i)).Int(); err != nil || v != i {
					t.Errorf("batcher:%d = %d, %v", i, v, err)
				}
			}
		}()
	}
	wg.Wait()

	// A read in flight holds the next one in the queue, whose context ends.
	bt.mu.Lock()
	bt.inFlight = true
	bt.mu.Unlock()
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := bt.Get(short, "batcher:1").Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued past its deadline: %v", err)
	}
	// The read in flight returns: the queued GET goes out, its reply
	// dropped, and the next caller gets its own (sent at once, or with the
	// next batch while that one is in flight).
	bt.next()
	if v, err := bt.Get(ctx, "batcher:2").Int(); err != nil || v != 2 {
		t.Fatalf("after a dropped reply: %d, %v", v, err)
	}
}
