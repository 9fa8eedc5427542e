package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/redis/go-redis/v9"
)

// Consumer drains the outboxes of every loaded sale into a Sink through a
// Redis consumer group, and runs the sales' hold timers. Any number of
// consumers, in any processes, may share a group: each entry is applied by
// one of them at a time, and an entry whose consumer died is claimed by
// another after ClaimIdle. Delivery is at least once; the Sink makes it
// exactly once in effect (SQLStore keys every write by request id).
type Consumer struct {
	inv    *Inventory
	sink   Sink
	cfg    consumerConfig
	report option.Reporter

	groups    sync.Map // outbox key -> struct{}: group known to exist
	resumed   sync.Map // outbox key -> last id handed back by resume, or resumeDone
	life      lifecycle
	calls     call.Bound  // inv's, counting in flight
	flight    call.Flight // calls left running on their own goroutine
	strikes   strikes
	lastPark  atomic.Int64 // unix ns of the last parked check
	applied   atomic.Int64
	credited  atomic.Int64
	expired   atomic.Int64
	claimed   atomic.Int64
	failed    atomic.Int64
	dead      atomic.Int64
	parked    atomic.Int64
	parkAlert atomic.Int64
	// token and current: the consumer's hold on its name (name.go).
	token         string
	current       atomic.Pointer[string]
	nameConflicts atomic.Int64
}

// NewConsumer returns a consumer of inv's sales (its prefix and bucket
// count) applying to sink. Start it with Run.
func NewConsumer(inv *Inventory, sink Sink, opts ...Option) (*Consumer, error) {
	if inv == nil || sink == nil {
		return nil, fmt.Errorf("%w: nil inventory or sink", ErrInvalidArgument)
	}
	o, err := apply(consumerPart, opts)
	if err != nil {
		return nil, err
	}
	c := &Consumer{inv: inv, sink: sink, cfg: o.con, report: o.report, token: newID()}
	name := o.con.name
	c.current.Store(&name)
	c.calls = inv.calls.Counting(&c.flight)
	c.life.init()
	return c, nil
}

// Run drains until ctx ends, then returns nil. Errors of one pass (Redis
// down, database down) are logged and retried on the next pass. Cancelling
// ctx between reading an entry and acknowledging it loses nothing: the entry
// stays pending and is applied again, harmlessly, later.
func (c *Consumer) Run(ctx context.Context) error {
	if c.life.stopping() {
		return ErrClosed
	}
	for ctx.Err() == nil && !c.life.stopping() {
		n, err := c.Pass(ctx)
		if errors.Is(err, ErrClosed) {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			c.report.Warn("cacheguard: stock: consumer pass", err)
		}
		if n > 0 && err == nil {
			continue
		}
		t := time.NewTimer(c.cfg.poll)
		select {
		case <-ctx.Done():
		case <-c.life.stop:
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

// Pass makes one pass over every loaded sale: expire due holds, claim
// entries abandoned by other consumers, read new entries, apply, acknowledge.
// It returns how many entries and holds it handled, and the first error;
// ErrClosed after Close.
func (c *Consumer) Pass(ctx context.Context) (int, error) {
	if err := c.life.enter(); err != nil {
		return 0, err
	}
	defer c.life.passes.Done()
	ctx, done := c.passContext(ctx)
	defer done()
	if err := c.holdName(ctx); err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	sales, err := do(c.calls, rctx, func(ctx context.Context) (map[string]string, error) {
		return c.inv.rdb.HGetAll(ctx, salesKey(c.inv.cfg.ns)).Result()
	})
	cancel()
	if err != nil {
		return 0, kind.Errorf("cacheguard: stock: consumer: sales: %w", err)
	}
	work := 0
	var first error
	for sku, ns := range sales {
		n, err := strconv.Atoi(ns)
		if err != nil || n < 1 || checkSKU(sku) != nil {
			continue
		}
		for b := 0; b < n; b++ {
			if c.life.stopping() {
				return work, first
			}
			w, err := c.bucket(ctx, sku, b)
			work += w
			if err != nil && first == nil {
				first = err
			}
			if ctx.Err() != nil {
				return work, first
			}
		}
	}
	c.checkParked(ctx)
	// A failing entry is seen again every pass or every ClaimIdle; one not
	// seen for much longer was acknowledged or claimed by another consumer.
	c.strikes.prune(time.Now().Add(-max(3*c.cfg.claimIdle, time.Minute)))
	return work, first
}

// errNoGroup: the outbox lost its group (a restart without persistence).
var errNoGroup = errors.New("consumer group missing")

func (c *Consumer) bucket(ctx context.Context, sku string, b int) (int, error) {
	n, err := c.bucketOnce(ctx, sku, b)
	if errors.Is(err, errNoGroup) {
		// The group is created again (from the stream's start) and the
		// pass goes on.
		var m int
		m, err = c.bucketOnce(ctx, sku, b)
		n += m
	}
	return n, err
}

func (c *Consumer) bucketOnce(ctx context.Context, sku string, b int) (int, error) {
	k := c.inv.keys(sku, b)
	rctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	work := 0
	n, err := c.inv.expireDue(rctx, c.calls, sku, b, c.cfg.batch)
	if err != nil {
		c.recheckOwn(k.outbox)
		return 0, err
	}
	c.expired.Add(int64(n))
	work += n
	if err := c.ensureGroup(rctx, k.outbox); err != nil {
		c.recheckOwn(k.outbox)
		return work, err
	}
	// Entries a previous process under this name left pending, then
	// entries pending with consumers that stopped acknowledging, then new
	// ones. An entry that fails (it stays pending, or goes to the dead
	// letters) does not stop the next stage: the entries behind it must
	// still be applied, and their success is what lets a failing entry be
	// told from a database outage.
	w, failed, err := c.resume(ctx, sku, b, k)
	work += w
	if err != nil || c.life.stopping() {
		return work, errors.Join(failed, err)
	}
	claimed := time.Now()
	msgs, err := do(c.calls, rctx, func(ctx context.Context) ([]redis.XMessage, error) {
		msgs, _, err := c.inv.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: k.outbox, Group: c.cfg.group, Consumer: c.name(),
			MinIdle: c.cfg.claimIdle, Start: "0-0", Count: int64(c.cfg.batch),
		}).Result()
		return msgs, err
	})
	if err != nil {
		return work, errors.Join(failed, c.streamErr(k.outbox, "claim", err))
	}
	c.claimed.Add(int64(len(msgs)))
	w, err = c.handle(ctx, sku, b, k, msgs, claimed)
	work += w
	failed = errors.Join(failed, err)
	if c.life.stopping() {
		return work, failed
	}
	read := time.Now()
	streams, err := c.readGroup(rctx, k.outbox, ">")
	if errors.Is(err, redis.Nil) {
		return work, failed
	}
	if err != nil {
		return work, errors.Join(failed, c.streamErr(k.outbox, "read", err))
	}
	for _, s := range streams {
		w, err := c.handle(ctx, sku, b, k, s.Messages, read)
		work += w
		failed = errors.Join(failed, err)
	}
	return work, failed
}

func (c *Consumer) ensureGroup(ctx context.Context, stream string) error {
	if _, ok := c.groups.Load(stream); ok {
		return nil
	}
	// From the stream's first entry: nothing written before the first
	// consumer started is skipped.
	err := doErr(c.calls, ctx, func(ctx context.Context) error {
		return c.inv.rdb.XGroupCreateMkStream(ctx, stream, c.cfg.group, "0").Err()
	})
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return kind.Errorf("cacheguard: stock: consumer: group on %s: %w", stream, err)
	}
	c.groups.Store(stream, struct{}{})
	return nil
}

// streamErr forgets the group on NOGROUP (a server restarted without its
// data): the next pass creates it again.
func (c *Consumer) streamErr(stream, what string, err error) error {
	c.recheckOwn(stream)
	if redis.HasErrorPrefix(err, "NOGROUP") {
		c.groups.Delete(stream)
		return kind.Errorf("cacheguard: stock: consumer: %s %s: %w: %w", what, stream, errNoGroup, err)
	}
	return kind.Errorf("cacheguard: stock: consumer: %s %s: %w", what, stream, err)
}

// handle applies msgs in order and acknowledges those done. read is when
// the read or claim that returned them was sent (the zero time for a read of
// the consumer's own pending entries, which does not renew them): entries
// are renewed before an application once half of ClaimIdle has passed
// since (claim.go).
func (c *Consumer) handle(ctx context.Context, sku string, b int, k bucketKeys, msgs []redis.XMessage, read time.Time) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	if f := c.cfg.hooks.afterRead; f != nil {
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.ID
		}
		if err := f(ids); err != nil {
			return 0, err
		}
	}
	var acks []string
	var first error
	cl := claims{renewed: read}
	acked := 0 // acknowledged by a renewal already
	for i, m := range msgs {
		if ctx.Err() != nil {
			break
		}
		if c.cfg.claimIdle > 0 && cl.due(c.cfg.claimIdle) {
			if err := c.renew(ctx, k.outbox, &cl, acks[acked:], msgs[i:]); err != nil {
				c.recheckOwn(k.outbox)
				first = errors.Join(first, c.streamErr(k.outbox, "renew", err))
				break
			}
			acked = len(acks)
		}
		if cl.lost[m.ID] {
			continue // another consumer took it while this one worked
		}
		err := c.apply(ctx, sku, b, m)
		switch {
		case err == nil:
			acks = append(acks, m.ID)
		case errors.Is(err, ErrPoison) || (errors.Is(err, errSink) && c.strikes.fail(k.outbox, m.ID, time.Now()) >= c.cfg.maxDeliver):
			if derr := c.deadLetter(ctx, k.outbox, m, err); derr != nil {
				c.recheckOwn(k.outbox)
				first = errors.Join(first, derr)
				continue
			}
			c.strikes.forget(k.outbox, m.ID)
			acks = append(acks, m.ID)
		default:
			if !errors.Is(err, errSink) {
				c.recheckOwn(k.outbox) // Redis failed (a transfer's credit)
			}
			c.failed.Add(1)
			if first == nil {
				first = err
			}
		}
	}
	if len(acks) > acked {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.timeout)
		err := doErr(c.calls, actx, func(ctx context.Context) error {
			return c.inv.rdb.XAck(ctx, k.outbox, c.cfg.group, acks[acked:]...).Err()
		})
		cancel()
		if err != nil {
			// Not acknowledged: applied again later, harmlessly.
			c.recheckOwn(k.outbox)
			return len(acks), kind.Errorf("cacheguard: stock: consumer: ack %s: %w", k.outbox, err)
		}
	}
	return len(acks), first
}

func (c *Consumer) apply(ctx context.Context, sku string, b int, m redis.XMessage) error {
	ev, err := parseEvent(sku, b, m)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	if ev.Op == opXfer {
		if ev.to >= 1024 {
			return fmt.Errorf("%w: transfer to bucket %d", ErrPoison, ev.to)
		}
		k := c.inv.keys(sku, ev.to)
		r, err := do(c.calls, actx, func(ctx context.Context) (int, error) {
			return creditScript.Run(ctx, c.inv.rdb, []string{k.meta, k.xin}, ev.RequestID, ev.Qty).Int()
		})
		if err != nil {
			return kind.Errorf("cacheguard: stock: consumer: credit %s/%d: %w", sku, ev.to, err)
		}
		if r < 0 {
			return fmt.Errorf("%w: transfer %s to bucket %d of %s, which holds no sale", ErrPoison, ev.RequestID, ev.to, sku)
		}
		if r == 1 {
			c.credited.Add(1)
		}
		return nil
	}
	if err := c.sink.Apply(actx, ev); err != nil {
		return kind.Errorf("cacheguard: stock: consumer: apply %s %s/%s: %w: %w", ev.Op, sku, ev.RequestID, errSink, err)
	}
	c.applied.Add(1)
	c.strikes.ok(c.inv.keys(sku, b).outbox, m.ID)
	return nil
}

// errSink marks a failure of the sink itself (not of Redis, not a malformed
// entry): only those count as strikes against an entry.
var errSink = errors.New("sink refused")

// deadLetter copies m to the dead-letter stream with the reason; the caller
// then acknowledges it. A crash between the two copies it twice, never zero
// times.
func (c *Consumer) deadLetter(ctx context.Context, stream string, m redis.XMessage, why error) error {
	vals := map[string]any{"stream": stream, "id": m.ID, "reason": fmt.Sprint(why)}
	for k, v := range m.Values {
		vals["f:"+k] = v
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.timeout)
	defer cancel()
	if err := doErr(c.calls, rctx, func(ctx context.Context) error {
		return c.inv.rdb.XAdd(ctx, &redis.XAddArgs{Stream: deadKey(c.inv.cfg.ns), Values: vals}).Err()
	}); err != nil {
		return kind.Errorf("cacheguard: stock: consumer: dead letter %s %s: %w", stream, m.ID, err)
	}
	c.dead.Add(1)
	c.report.Logger.Error("cacheguard: stock: entry moved to the dead-letter stream", "stream", stream, "id", m.ID, "reason", why)
	return nil
}
