package cache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

// The engine's single-key commands share round trips: its GETs, the lease
// attempts (SET NX GET) and fills (a script by SHA) of a Get. Each Redis
// node (the single server, the master of a failover client, each master of
// a cluster, each shard of a ring) has one queue. A command goes out at
// once, as one plain command, while fewer than readsInFlight commands of
// the node are under way: a lone caller pays one round trip and nothing
// else. Otherwise it waits in the queue, and when a command of the node
// returns, everything queued goes out together as one pipeline (at most
// maxReadBatch commands; the rest go in the next one), so N concurrent
// callers cost about one round trip per batch instead of one connection
// each. A script answered NOSCRIPT (the server lost its script cache) is
// sent again with its body, in the queue's next pipeline or, alone, as a
// plain EVAL (pipescript.go): a script that ran never runs twice.
//
// A caller whose context ends while its command waits leaves at once with
// its context's error (a command already sent for it in a pipeline is left
// to finish, its reply dropped; a command not yet sent never is); the
// others are not affected. A read sent plain ends by its context on any
// client too (sendCmd).
// A command that fails in a pipeline fails only its own caller; a
// connection failure fails the callers whose commands were on it, each
// counted by the breaker as its own failure. On a cluster the pipeline
// follows MOVED and ASK replies as any go-redis pipeline does; the queue a
// key joins is its slot's master at the time it is sent (readnodes.go),
// which only groups the commands: where they go is the client's routing
// (replicas included). go-redis hooks see each queued command, by its own
// name, in a pipeline.

const (
	// readsInFlight is how many commands of one node go out without
	// queueing: two, so that one slow reply (a big value, a stalled
	// connection) does not hold every other command of its node, and so
	// that one batch is built and decoded while the other is on the wire.
	readsInFlight = 2
	// maxReadBatch bounds one pipeline of queued commands, and with it the
	// memory a burst of callers holds in one round trip.
	maxReadBatch = 512
)

// readQueue is one node's commands under way and those waiting for them.
type readQueue struct {
	key     string // a key the node served when the queue was made (readnodes.go)
	mu      sync.Mutex
	busy    int // commands of this node under way (plain or a pipeline)
	waiting []*queued
}

// queued is one caller's command waiting in a queue or sent in a batch.
// Its reply is written into cmd, which its caller reads once done is
// signalled, and never after leaving on its context's end.
type queued struct {
	cmd      redis.Cmder
	script   *scriptCall     // non-nil: cmd is this script's EVALSHA (a *redis.Cmd)
	ctx      context.Context // the caller's, for its values
	deadline time.Time       // the caller's, zero if none
	done     chan struct{}
}

var queuedCmds = sync.Pool{New: func() any { return &queued{done: make(chan struct{}, 1)} }}

// getRaw reads rkey's bytes from Redis: redis.Nil when there is no such key,
// ctx's error if ctx ended first.
func (c *Cache[V]) getRaw(ctx context.Context, rkey string) ([]byte, error) {
	if c.hooks != nil && c.hooks.readVia != nil {
		return c.hooks.readVia.Get(ctx, rkey).Bytes()
	}
	cmd := redis.NewStringCmd(ctx, "get", rkey)
	if err := c.sendCmd(ctx, rkey, cmd, nil, true); err != nil {
		return nil, err
	}
	return cmd.Bytes()
}

// send sends cmd, a command on the one key rkey (a script's EVALSHA when sc
// is not nil), through the queue of rkey's node, and returns once cmd
// holds its reply; or, if ctx ends while cmd waits in the queue, at once
// with ctx's error, after which cmd must not be read. A command sent plain
// is bounded by ctx as far as the client applies it: the writes bound
// their calls themselves (boundedWrite), and must see the outcome of a
// write that landed.
func (c *Cache[V]) send(ctx context.Context, rkey string, cmd redis.Cmder, sc *scriptCall) error {
	return c.sendCmd(ctx, rkey, cmd, sc, false)
}

// sendCmd is send; bound makes a plain command end by ctx on any client
// (internal/call): on one without ContextTimeoutEnabled a command whose
// context ends is then left to finish on a goroutine of its own, holding
// its place in the queue until it does, and the caller leaves with ctx's
// error. Only for commands whose outcome may be dropped (a read).
func (c *Cache[V]) sendCmd(ctx context.Context, rkey string, cmd redis.Cmder, sc *scriptCall, bound bool) error {
	q := c.reads.queue(ctx, c.rdb, rkey)
	q.mu.Lock()
	if q.busy < readsInFlight && len(q.waiting) == 0 {
		q.busy++
		q.mu.Unlock()
		if !bound || ctx.Done() == nil { // nothing to bound it by: inline
			c.sendPlain(ctx, q, cmd, sc)
			return nil
		}
		_, err := call.Do(c.calls, ctx, 0, func(ctx context.Context) (struct{}, error) {
			c.sendPlain(ctx, q, cmd, sc)
			return struct{}{}, nil
		}, nil)
		return err
	}
	if err := ctx.Err(); err != nil {
		q.mu.Unlock()
		return err
	}
	g := queuedCmds.Get().(*queued)
	g.cmd, g.script, g.ctx = cmd, sc, ctx
	g.deadline, _ = ctx.Deadline()
	q.waiting = append(q.waiting, g)
	q.mu.Unlock()
	select {
	case <-g.done:
		*g = queued{done: g.done}
		queuedCmds.Put(g)
		return nil
	case <-ctx.Done():
		q.mu.Lock()
		if i := slices.Index(q.waiting, g); i >= 0 {
			q.waiting = slices.Delete(q.waiting, i, i+1)
		}
		q.mu.Unlock()
		// Sent already, g is left to the batch (and the garbage collector).
		return ctx.Err()
	}
}

// sendPlain sends cmd, one of q's commands under way, as one plain command
// (a script's EVALSHA answered NOSCRIPT again as EVAL, as go-redis's
// Script.Run does), then ends it in q.
func (c *Cache[V]) sendPlain(ctx context.Context, q *readQueue, cmd redis.Cmder, sc *scriptCall) {
	defer c.sendQueued(q) // even if a hook panics: the queue must move on
	_ = c.rdb.Process(ctx, cmd)
	if sc != nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		adopt(cmd.(*redis.Cmd), sc.script.Eval(ctx, c.rdb, sc.keys, sc.args...))
	}
}

// sendQueued ends one of q's commands under way: if callers queued
// meanwhile, their commands go out in pipelines, one after another until
// the queue is empty, on a goroutine counted for Close; otherwise q has one
// command less under way.
func (c *Cache[V]) sendQueued(q *readQueue) {
	if batch := q.take(); batch != nil {
		c.sendBatches(q, batch)
	}
}

// sendBatches sends batch, then every batch q holds after it, on a goroutine
// counted for Close; once Close has begun waiting for those, on the
// caller's goroutine instead (a command sent plain may end after Close
// returned, and nothing of the cache's may run after it). It is apart from
// sendQueued so that the closure's variables are allocated only when there
// is a batch, not on every command.
func (c *Cache[V]) sendBatches(q *readQueue, batch []*queued) {
	send := func() {
		for ; batch != nil; batch = q.take() {
			c.sendCmds(batch)
		}
	}
	if !c.flight.TryGo(send) {
		send()
	}
}

// take removes up to maxReadBatch waiting commands from q, or, when none
// waits, ends the command under way and returns nil.
func (q *readQueue) take() []*queued {
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

// sendCmds sends batch's commands as one pipeline (and its scripts
// answered NOSCRIPT again with their bodies) and hands each caller its
// reply. The pipeline's context carries the values of its first caller's
// (a tracing hook finds its parent span there, as on a plain command) and
// the latest of the callers' deadlines (none if one of them has none): a
// caller whose context ends before the reply has left already.
func (c *Cache[V]) sendCmds(batch []*queued) {
	ctx, cancel := context.WithoutCancel(batch[0].ctx), context.CancelFunc(func() {})
	if dl, ok := latestDeadline(batch); ok {
		ctx, cancel = context.WithDeadline(ctx, dl)
	}
	defer cancel()
	p := c.rdb.Pipeline()
	var calls []scriptCall
	var scripts []*redis.Cmd
	var gets []redis.Cmder // GETs handed to the batchReads hook
	for _, g := range batch {
		if c.hooks != nil && c.hooks.batchReads != nil && g.script == nil && g.cmd.Name() == "get" {
			gets = append(gets, g.cmd)
			continue
		}
		pipe.Mark(g.cmd)
		_ = p.Process(ctx, g.cmd)
		if g.script != nil {
			calls, scripts = append(calls, *g.script), append(scripts, g.cmd.(*redis.Cmd))
		}
	}
	replied := func() {}
	if len(gets) > 0 {
		replied = c.hooks.batchReads(ctx, p, gets)
	}
	execErr, panicked := execPipeline(ctx, p) // each command carries its own error
	if panicked == nil {
		replied()
	}
	if panicked == nil && len(calls) > 0 {
		panicked = guard("script", func() { evalAgain(ctx, c.rdb, calls, scripts) })
	}
	for _, g := range batch {
		if panicked != nil {
			g.cmd.SetErr(panicked)
		} else {
			pipe.Fail(g.cmd, execErr)
		}
		g.done <- struct{}{}
	}
}

// execPipeline sends p and returns Exec's error, and a panic (of a
// go-redis hook, say) as an error for every caller of the batch: on this
// goroutine nobody could recover it, and the queue must move on.
func execPipeline(ctx context.Context, p redis.Pipeliner) (execErr, panicked error) {
	panicked = guard("read", func() { _, execErr = p.Exec(ctx) })
	return execErr, panicked
}

// guard runs send, returning a panic of it as an error.
func guard(what string, send func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cacheguard: %s pipeline panicked: %v", what, p)
		}
	}()
	send()
	return nil
}

// latestDeadline is the latest of batch's deadlines; ok is false if one of
// its callers has none.
func latestDeadline(batch []*queued) (dl time.Time, ok bool) {
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
