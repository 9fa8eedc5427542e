package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Publishing. A write that landed in Redis must reach the other instances
// even if its caller gives up right after it, so the message is not sent on
// the writer's context: writes queue their keys, and one goroutine per cache
// (started when there is something to send, gone when the queue is empty)
// sends them on a context of its own, bounded by publishBudget and retried.
// One sender means messages leave in sequence order, so a subscriber reads a
// gap in the sequence as a lost message rather than a reordering; and writes
// that queue up while a message is in flight go out together in the next one.
//
// A message given up after every attempt still used its sequence number: the
// subscribers see the gap at this publisher's next message and clear their
// local tiers. Until then the local TTL bounds the staleness.

const (
	publishBudget   = 2 * time.Second // for one batch, every attempt included
	publishAttempts = 5
	publishRetryMin = 10 * time.Millisecond
)

// Publish queues keys for the other instances and waits until they are
// sent or ctx ends; they are sent either way.
func (c *Bus) Publish(ctx context.Context, keys []string) {
	c.enqueue(ctx, &pendingInval{keys: keys, ctx: context.WithoutCancel(ctx), done: make(chan struct{})})
}

// PublishTags announces tags invalidated at ms (Unix ms) to the other
// instances, as Publish does keys.
func (c *Bus) PublishTags(ctx context.Context, tags []string, ms int64) {
	c.enqueue(ctx, &pendingInval{tags: tags, tagTime: ms, ctx: context.WithoutCancel(ctx), done: make(chan struct{})})
}

// enqueue queues p for the sender and waits until it is sent or ctx ends.
func (c *Bus) enqueue(ctx context.Context, p *pendingInval) {
	c.pub.mu.Lock()
	c.pub.queue = append(c.pub.queue, p)
	start := !c.pub.running
	c.pub.running = true
	c.pub.mu.Unlock()
	if start && !c.life.Go(c.runPublisher) {
		c.runPublisher() // closing: send from here, detached all the same
	}
	select {
	case <-p.done:
	case <-ctx.Done():
	}
}

// runPublisher sends queued invalidations until the queue is empty.
func (c *Bus) runPublisher() {
	for {
		c.pub.mu.Lock()
		batch := c.pub.queue
		c.pub.queue = nil
		if len(batch) == 0 {
			c.pub.running = false
			c.pub.mu.Unlock()
			return
		}
		c.pub.mu.Unlock()
		c.sendBatch(batch)
		for _, p := range batch {
			close(p.done)
		}
	}
}

// sendBatch sends the keys of batch as few messages as the size limits allow,
// retrying failed ones within publishBudget.
func (c *Bus) sendBatch(batch []*pendingInval) {
	msgs := c.buildInvalidations(batch)
	ctx, cancel := context.WithTimeout(batch[0].ctx, publishBudget)
	defer cancel()
	left, retry := msgs, publishRetryMin
	var err error
	for attempt := 1; ; attempt++ {
		left, err = c.sendInvalidations(ctx, left)
		if len(left) == 0 || attempt == publishAttempts || ctx.Err() != nil {
			break
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		retry *= 2
	}
	c.Sent.Add(uint64(len(msgs) - len(left)))
	if len(left) > 0 {
		c.SendFailures.Add(uint64(len(left)))
		key := batch[0].name()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: gave up after %v", errs.ErrRedis, publishBudget)
		}
		c.rec.Report(telemetry.Invalidation, key, kind.Errorf("cacheguard: cache: invalidation of %d message(s) not sent, other instances drop the keys at their local TTL or the next message: %w", len(left), c.redis.Error(key, "publish invalidation", err)))
	}
}

func (c *Bus) buildInvalidations(batch []*pendingInval) [][]byte {
	var msgs [][]byte
	var keys []string
	size := 0
	flush := func() {
		c.pub.seq++
		msgs = append(msgs, wire.EncodeInvalidation(wire.Invalidation{Source: c.source, Sent: time.Now().UnixNano(), Seq: c.pub.seq, Keys: keys}))
		keys, size = nil, 0
	}
	for _, p := range batch {
		if len(p.tags) > 0 {
			// A message of its own, after the keys queued before it.
			if len(keys) > 0 {
				flush()
			}
			msgs = append(msgs, c.tagMessages(p)...)
		}
		for _, k := range p.keys {
			if len(keys) > 0 && (len(keys) == MaxKeysPerInval || size+len(k) > maxBytesPerInval) {
				flush()
			}
			keys = append(keys, k)
			size += len(k)
		}
	}
	if len(keys) > 0 {
		flush()
	}
	return msgs
}

// sendInvalidations publishes msgs in order (pipelined when there are
// several) and returns those that failed, with the last error.
func (c *Bus) sendInvalidations(ctx context.Context, msgs [][]byte) ([][]byte, error) {
	send := func(ctx context.Context, p redis.Cmdable, msg []byte) *redis.IntCmd {
		if c.redis.Sharded() {
			return p.SPublish(ctx, c.cfg.Channel, msg)
		}
		return p.Publish(ctx, c.cfg.Channel, msg)
	}
	if len(msgs) == 1 {
		if err := send(ctx, c.redis.Client(), msgs[0]).Err(); err != nil {
			return msgs, err
		}
		return nil, nil
	}
	cmds := make([]*redis.IntCmd, len(msgs))
	_, _ = pipe.Run(ctx, c.redis.Client().Pipeline(), func(p redis.Pipeliner) error {
		for i, m := range msgs {
			cmds[i] = send(ctx, p, m)
		}
		return nil
	})
	var failed [][]byte
	var last error
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			failed, last = append(failed, msgs[i]), err
		}
	}
	return failed, last
}

// name is what a report about p names: its first key or tag.
func (p *pendingInval) name() string {
	if len(p.keys) > 0 {
		return p.keys[0]
	}
	if len(p.tags) > 0 {
		return p.tags[0]
	}
	return ""
}

// tagMessages encodes p's tags in messages within the size limits.
func (c *Bus) tagMessages(p *pendingInval) [][]byte {
	var msgs [][]byte
	for tags := p.tags; len(tags) > 0; {
		n, size := 0, 0
		for n < len(tags) && n < MaxKeysPerInval && (n == 0 || size+len(tags[n]) <= maxBytesPerInval) {
			size += len(tags[n])
			n++
		}
		c.pub.seq++
		msgs = append(msgs, wire.EncodeInvalidation(wire.Invalidation{Source: c.source, Sent: time.Now().UnixNano(), Seq: c.pub.seq, TagTime: p.tagTime, Tags: tags[:n]}))
		tags = tags[n:]
	}
	return msgs
}
