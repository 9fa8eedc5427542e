package transport

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// Get reads rkey's bytes from Redis through the queue of the reads of
// its node: redis.Nil when there is no such key, ctx's error if ctx ended
// first.
func (c *Redis) Get(ctx context.Context, rkey string) ([]byte, error) {
	if c.hooks != nil && c.hooks.ReadVia != nil {
		return c.hooks.ReadVia.Get(ctx, rkey).Bytes()
	}
	cmd := redis.NewStringCmd(ctx, "get", rkey)
	if err := c.sendCmd(ctx, rkey, cmd, nil, true); err != nil {
		return nil, err
	}
	return cmd.Bytes()
}

// Send sends cmd, a write on the one key rkey (a script's EVALSHA when sc
// is not nil), through the queue of the writes of rkey's node, and returns
// once cmd holds its reply; or, if ctx ends while cmd waits in the queue,
// at once with ctx's error, after which cmd must not be read. A command
// sent plain is bounded by ctx as far as the client applies it: the writes
// bound their calls themselves (the write path), and must see the outcome of
// a write that landed.
func (c *Redis) Send(ctx context.Context, rkey string, cmd redis.Cmder, sc *script.Call) error {
	return c.sendCmd(ctx, rkey, cmd, sc, false)
}

// sendCmd is send; read sends cmd, a read, through the queue of the reads,
// and makes it end by ctx on any client (internal/call): on one without
// ContextTimeoutEnabled a read whose context ends is then left to finish on
// a goroutine of its own, and the caller leaves with ctx's error, giving
// the read's place in the queue back.
func (c *Redis) sendCmd(ctx context.Context, rkey string, cmd redis.Cmder, sc *script.Call, read bool) error {
	q := c.queues.queue(ctx, c.rdb, rkey).of(read)
	var start time.Duration // a read's, for its queue's width
	if read {
		start = since()
	}
	q.mu.Lock()
	if q.free() {
		q.busy++
		q.mu.Unlock()
		// The place goes back when sendPlain returns (even if a hook
		// panics: the queue must move on), or once a read's caller left.
		defer c.sendQueued(q, read, start)
		if !read || ctx.Done() == nil { // nothing to bound it by: inline
			c.sendPlain(ctx, cmd, sc)
			return nil
		}
		_, err := call.Do(c.calls, ctx, 0, func(ctx context.Context) (struct{}, error) {
			c.sendPlain(ctx, cmd, sc)
			return struct{}{}, nil
		}, nil)
		return err
	}
	if err := ctx.Err(); err != nil {
		q.mu.Unlock()
		return err
	}
	g := queuedCmds.Get().(*queued)
	g.cmd, g.script, g.ctx, g.start = cmd, sc, ctx, start
	g.deadline, _ = ctx.Deadline()
	q.waiting = append(q.waiting, g)
	q.mu.Unlock()
	select {
	case <-g.done:
		*g = queued{done: g.done}
		queuedCmds.Put(g)
		return nil
	case <-ctx.Done():
		// Sent already, g is left to the batch (and the garbage collector).
		if next := q.leave(g, read); next != nil {
			c.sendBatches(q, next, read)
		}
		return ctx.Err()
	}
}

// sendPlain sends cmd as one plain command (a script's EVALSHA answered
// NOSCRIPT again as EVAL: script.Process).
func (c *Redis) sendPlain(ctx context.Context, cmd redis.Cmder, sc *script.Call) {
	if sc != nil {
		script.Process(ctx, c.rdb, cmd.(*redis.Cmd), *sc)
		return
	}
	_ = c.rdb.Process(ctx, cmd)
}

// sendQueued gives back the place of one of q's plain commands: if callers
// queued meanwhile, their commands go out in pipelines, one after another
// until the queue is empty, on a goroutine counted for Close; otherwise q
// has one command less under way.
func (c *Redis) sendQueued(q *cmdQueue, read bool, start time.Duration) {
	if b := q.take(read, start, c.widest); b != nil {
		c.sendBatches(q, b, read)
	}
}

// sendBatches sends b, then every batch q holds after it, on a goroutine
// counted for Close; once Close has begun waiting for those, on the
// caller's goroutine instead (a command sent plain may end after Close
// returned, and nothing of the cache's may run after it). It is apart from
// sendQueued so that the closure's variables are allocated only when there
// is a batch, not on every command.
func (c *Redis) sendBatches(q *cmdQueue, b *sentBatch, read bool) {
	send := func() {
		for ; b != nil; b = q.next(b, read, c.widest) {
			c.sendCmds(b.cmds)
		}
	}
	if !c.flight.TryGo(send) {
		send()
	}
}

// sendCmds sends batch's commands as one pipeline (and its scripts
// answered NOSCRIPT again with their bodies) and hands each caller its
// reply. The pipeline's context carries the values of its first caller's
// (a tracing hook finds its parent span there, as on a plain command) and
// the latest of the callers' deadlines (none if one of them has none): a
// caller whose context ends before the reply has left already.
func (c *Redis) sendCmds(batch []*queued) {
	ctx, cancel := context.WithoutCancel(batch[0].ctx), context.CancelFunc(func() {})
	if dl, ok := latestDeadline(batch); ok {
		ctx, cancel = context.WithDeadline(ctx, dl)
	}
	defer cancel()
	p := c.rdb.Pipeline()
	var calls []script.Call
	var scripts []*redis.Cmd
	var gets []redis.Cmder // GETs handed to the batchReads hook
	for _, g := range batch {
		if c.hooks != nil && c.hooks.BatchReads != nil && g.script == nil && g.cmd.Name() == "get" {
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
		replied = c.hooks.BatchReads(ctx, p, gets)
	}
	execErr, panicked := execPipeline(ctx, p) // each command carries its own error
	if panicked == nil {
		replied()
	}
	if panicked == nil && len(calls) > 0 {
		panicked = guard("script", func() { script.Retry(ctx, c.rdb, calls, scripts) })
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
			err = fmt.Errorf("cacheguard: cache: %s pipeline panicked: %v", what, p)
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
