package stock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// resumeDone marks a stream whose earlier pending entries (left by a
// process that ran under this consumer's name) were all handed back.
const resumeDone = "done"

// resume hands back, once per stream and consumer (and again after a Redis
// failure, see recheckOwn), the entries a previous process under the same
// name, or this one, read and never acknowledged: they are this
// consumer's own, so waiting ClaimIdle for them (as for another consumer's)
// would only delay them. It pages through them with XREADGROUP from an id
// (the consumer's history) over as many passes as it takes, and never
// rereads one: entries that fail again here are retried after ClaimIdle,
// like any failed entry, so a database outage is not retried in a loop.
//
// failed is the entries' failures; err, a failure to read them.
func (c *Consumer) resume(ctx context.Context, sku string, b int, k bucketKeys) (n int, failed, err error) {
	from := "0"
	if v, ok := c.resumed.Load(k.outbox); ok {
		if v.(string) == resumeDone {
			return 0, nil, nil
		}
		from = v.(string)
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	streams, err := c.readGroup(rctx, k.outbox, from)
	cancel()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	if err != nil {
		return 0, nil, c.streamErr(k.outbox, "resume", err)
	}
	var msgs []redis.XMessage
	for _, s := range streams {
		msgs = append(msgs, s.Messages...)
	}
	if len(msgs) == 0 {
		c.resumed.Store(k.outbox, resumeDone)
		return 0, nil, nil
	}
	c.resumed.Store(k.outbox, msgs[len(msgs)-1].ID)
	n, failed = c.handle(ctx, sku, b, k, msgs, time.Time{}) // a history read renews nothing
	return n, failed, nil
}

// recheckOwn makes the next pass look for this consumer's own pending
// entries of stream again, from the start. It follows every failed Redis
// call: entries may have been delivered to it and their reply lost, an
// acknowledgement may not have landed, or the server may have restarted
// with its data (AOF) and kept them pending under this consumer's name.
// Without it they would wait ClaimIdle, as if their consumer had died.
func (c *Consumer) recheckOwn(stream string) { c.resumed.Delete(stream) }

// readGroup reads up to a batch of stream's entries for this consumer from
// id (">": new entries; another id: its own pending ones after it).
func (c *Consumer) readGroup(ctx context.Context, stream, id string) ([]redis.XStream, error) {
	return do(c.calls, ctx, func(ctx context.Context) ([]redis.XStream, error) {
		return c.inv.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: c.cfg.group, Consumer: c.name(), Streams: []string{stream, id},
			Count: int64(c.cfg.batch), Block: -1,
		}).Result()
	})
}
