package cache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reads of different keys share round trips. Each Redis node (the single
// server, the master of a failover client, each master of a cluster, each
// shard of a ring) has a read queue. A GET goes out at once, as one plain
// command, while fewer than readsInFlight reads of the node are under way:
// a lone caller pays one round trip and nothing else. Otherwise it waits in
// the queue, and when a read of the node returns, everything queued goes
// out together as one pipeline (at most maxReadBatch GETs; the rest go in
// the next one), so N concurrent callers cost about one round trip per
// batch instead of one connection each.
//
// A queued caller whose context ends leaves at once with its context's
// error (a read already sent for it is dropped on return); the others are
// not affected. A GET that fails in a pipeline fails only its own caller;
// a connection failure fails the callers whose GETs were on it, each
// counted by the breaker as its own failure. On a cluster the pipeline
// follows MOVED and ASK replies as any go-redis pipeline does; the queue a
// key joins is its slot's master at the time it is read, which only groups
// the reads: where they go is the client's routing (replicas included).
// go-redis hooks see a queued read as a "get" in a pipeline.

const (
	// readsInFlight is how many reads of one node go out without queueing:
	// two, so that one slow reply (a big value, a stalled connection) does
	// not hold every other read of its node, and so that one batch is
	// built and decoded while the other is on the wire.
	readsInFlight = 2
	// maxReadBatch bounds one pipeline of queued reads, and with it the
	// memory a burst of callers holds in one round trip.
	maxReadBatch = 512
)

// readQueue is one node's reads under way and the GETs waiting for them.
type readQueue struct {
	key     string // a key the node served when the queue was made (readnodes.go)
	mu      sync.Mutex
	busy    int // reads of this node under way (plain or a pipeline)
	waiting []*queuedGet
}

// queuedGet is one caller's GET waiting in a queue or sent in a batch.
type queuedGet struct {
	key      string
	deadline time.Time // the caller's, zero if none
	done     chan struct{}
	raw      []byte
	err      error
}

var queuedGets = sync.Pool{New: func() any { return &queuedGet{done: make(chan struct{}, 1)} }}

// getRaw reads rkey's bytes from Redis: redis.Nil when there is no such key,
// ctx's error if ctx ended first.
func (c *Cache[V]) getRaw(ctx context.Context, rkey string) ([]byte, error) {
	if c.hooks != nil && c.hooks.readVia != nil {
		return c.hooks.readVia.Get(ctx, rkey).Bytes()
	}
	q := c.reads.queue(ctx, c.rdb, rkey)
	q.mu.Lock()
	if q.busy < readsInFlight && len(q.waiting) == 0 {
		q.busy++
		q.mu.Unlock()
		defer c.sendQueued(q) // even if a hook panics: the queue must move on
		return c.rdb.Get(ctx, rkey).Bytes()
	}
	if err := ctx.Err(); err != nil {
		q.mu.Unlock()
		return nil, err
	}
	g := queuedGets.Get().(*queuedGet)
	g.key = rkey
	g.deadline, _ = ctx.Deadline()
	q.waiting = append(q.waiting, g)
	q.mu.Unlock()
	select {
	case <-g.done:
		raw, err := g.raw, g.err
		*g = queuedGet{done: g.done}
		queuedGets.Put(g)
		return raw, err
	case <-ctx.Done():
		q.mu.Lock()
		if i := slices.Index(q.waiting, g); i >= 0 {
			q.waiting = slices.Delete(q.waiting, i, i+1)
		}
		q.mu.Unlock()
		// Sent already, g is left to the batch (and the garbage collector).
		return nil, ctx.Err()
	}
}

// sendQueued ends one of q's reads under way: if callers queued meanwhile,
// their GETs go out in pipelines, one after another until the queue is
// empty, on a goroutine counted for Close; otherwise q has one read less.
func (c *Cache[V]) sendQueued(q *readQueue) {
	batch := q.take()
	if batch == nil {
		return
	}
	c.flight.Go(func() {
		for ; batch != nil; batch = q.take() {
			c.sendReads(batch)
		}
	})
}

// take removes up to maxReadBatch waiting GETs from q, or, when none
// waits, ends the read under way and returns nil.
func (q *readQueue) take() []*queuedGet {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.busy--
		return nil
	}
	n := min(len(q.waiting), maxReadBatch)
	batch := slices.Clone(q.waiting[:n])
	q.waiting = slices.Delete(q.waiting, 0, n)
	return batch
}

// sendReads sends batch's GETs as one pipeline and hands each caller its
// reply. The pipeline's context carries the latest of the callers'
// deadlines (none if one of them has none): a caller whose context ends
// before the reply has left already.
func (c *Cache[V]) sendReads(batch []*queuedGet) {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if dl, ok := latestDeadline(batch); ok {
		ctx, cancel = context.WithDeadline(ctx, dl)
	}
	defer cancel()
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(batch))
	for i, g := range batch {
		cmds[i] = pipe.Get(ctx, g.key)
	}
	panicked := execPipeline(ctx, pipe) // each command carries its own error
	for i, g := range batch {
		if g.raw, g.err = cmds[i].Bytes(); panicked != nil {
			g.raw, g.err = nil, panicked
		}
		g.done <- struct{}{}
	}
}

// execPipeline sends pipe, turning a panic (of a go-redis hook, say) into
// an error for every caller of the batch: on this goroutine nobody could
// recover it, and the queue must move on.
func execPipeline(ctx context.Context, pipe redis.Pipeliner) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cacheguard: read pipeline panicked: %v", p)
		}
	}()
	_, _ = pipe.Exec(ctx)
	return nil
}

// latestDeadline is the latest of batch's deadlines; ok is false if one of
// its callers has none.
func latestDeadline(batch []*queuedGet) (dl time.Time, ok bool) {
	for _, g := range batch {
		if g.deadline.IsZero() {
			return time.Time{}, false
		}
		if g.deadline.After(dl) {
			dl = g.deadline
		}
	}
	return dl, true
}
