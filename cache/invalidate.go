package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Invalidation across instances. Every write (Set, Delete, MarkStale, a
// versioned write) drops the keys from this instance's local tier and
// publishes them on the prefix's channel; every instance with a local tier
// subscribes and drops what it hears, skipping its own messages by a random
// source id. On a Redis Cluster the channel is a sharded one (SPUBLISH /
// SSUBSCRIBE), so the message goes to one shard instead of every node.
//
// Pub/sub delivers at most once: a message sent while a subscriber is
// reconnecting is lost. So the subscription's state gates the local tier
// through an epoch counter: odd while the subscription is down (nothing is
// served from memory as fresh, nothing is admitted), even once it is up.
// Whenever it comes (back) up the whole tier is cleared first, so no entry
// that may have missed a message survives a gap.
//
// Message format: 16 bytes of source id, then for each key a uvarint length
// and the key's bytes (keys may hold any byte).

const (
	sourceIDSize      = 16
	subscribeRetryMin = 50 * time.Millisecond
	subscribeRetryMax = 2 * time.Second
	subscribePing     = 5 * time.Second
)

func newSourceID() ([sourceIDSize]byte, error) {
	var id [sourceIDSize]byte
	_, err := rand.Read(id[:])
	return id, err
}

func encodeInvalidation(src [sourceIDSize]byte, keys []string) []byte {
	n := sourceIDSize
	for _, k := range keys {
		n += binary.MaxVarintLen64 + len(k)
	}
	b := make([]byte, 0, n)
	b = append(b, src[:]...)
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

func decodeInvalidation(b []byte) (src [sourceIDSize]byte, keys []string, err error) {
	if len(b) < sourceIDSize {
		return src, nil, errors.New("short invalidation message")
	}
	copy(src[:], b)
	b = b[sourceIDSize:]
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return src, nil, errors.New("malformed invalidation message")
		}
		keys = append(keys, string(b[w:w+int(n)]))
		b = b[w+int(n):]
	}
	return src, keys, nil
}

func (c *Cache[V]) sharded() bool {
	_, ok := c.rdb.(*redis.ClusterClient)
	return ok
}

// afterWrite runs after a write to keys landed in Redis: it drops them from
// the local tier and tells the other instances to.
//
// It publishes even when this instance has no local tier: a writer service
// often has none while its readers do.
func (c *Cache[V]) afterWrite(ctx context.Context, keys ...string) {
	if c.local != nil {
		c.invalSeq.Add(1)
		for _, k := range keys {
			c.local.Del(k)
		}
	}
	msg := encodeInvalidation(c.source, keys)
	var err error
	if c.sharded() {
		err = c.rdb.SPublish(ctx, c.channel, msg).Err()
	} else {
		err = c.rdb.Publish(ctx, c.channel, msg).Err()
	}
	if err != nil {
		// The write landed; other instances drop the key when its local
		// TTL runs out instead. Say so.
		c.report(keys[0], c.redisError(keys[0], "publish invalidation", err))
	}
}

// subscribe runs until Close, keeping the invalidation subscription and the
// epoch in step.
func (c *Cache[V]) subscribe() {
	ctx := c.closing
	var ps *redis.PubSub
	if c.sharded() {
		ps = c.rdb.SSubscribe(ctx, c.channel)
	} else {
		ps = c.rdb.Subscribe(ctx, c.channel)
	}
	defer ps.Close()
	// A blocked receive does not watch ctx (go-redis reads with its own
	// timeouts); closing the PubSub on Close unblocks it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	retry := subscribeRetryMin
	for {
		msg, err := ps.ReceiveTimeout(ctx, subscribePing)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			var nerr interface{ Timeout() bool }
			if errors.As(err, &nerr) && nerr.Timeout() {
				// Quiet channel: make sure the connection is alive. A
				// failed ping surfaces as an error on the next receive.
				ps.Ping(ctx)
				continue
			}
			c.subscriptionDown(err)
			t := time.NewTimer(retry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			retry = min(2*retry, subscribeRetryMax)
			continue
		}
		retry = subscribeRetryMin
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				c.subscriptionUp()
			case "unsubscribe", "sunsubscribe":
				// The server dropped us: on a cluster, the channel's slot
				// moved. go-redis does not resubscribe by itself.
				c.subscriptionDown(fmt.Errorf("server ended the subscription (%s)", m.Kind))
				var err error
				if c.sharded() {
					err = ps.SSubscribe(ctx, c.channel)
				} else {
					err = ps.Subscribe(ctx, c.channel)
				}
				if err != nil {
					c.report("", fmt.Errorf("cacheguard: resubscribe %s: %w", c.channel, err))
				}
			}
		case *redis.Message:
			c.onInvalidation(m.Payload)
		}
	}
}

func (c *Cache[V]) subscriptionDown(err error) {
	if e := c.epoch.Load(); e%2 == 0 {
		c.epoch.CompareAndSwap(e, e+1)
	}
	c.report("", fmt.Errorf("cacheguard: invalidation subscription down, local tier off until it is back: %w", err))
}

func (c *Cache[V]) subscriptionUp() {
	e := c.epoch.Load()
	if e%2 == 0 {
		// Already up: a resubscription we did not see fail. Go through
		// down first so nothing admitted before is trusted.
		c.epoch.Add(1)
	}
	c.local.Clear()
	c.stats.localFlushes.Add(1)
	c.epoch.Add(1)
	c.subscribedOnce.Do(func() { close(c.subscribed) })
	if c.hooks.onSubscribed != nil {
		c.hooks.onSubscribed()
	}
}

func (c *Cache[V]) onInvalidation(payload string) {
	src, keys, err := decodeInvalidation([]byte(payload))
	if err != nil {
		c.report("", fmt.Errorf("cacheguard: invalidation on %s: %w", c.channel, err))
		return
	}
	if bytes.Equal(src[:], c.source[:]) {
		return
	}
	c.invalSeq.Add(1)
	for _, k := range keys {
		c.local.Del(k)
	}
	c.forget(keys)
	if c.hooks.onInvalidate != nil {
		c.hooks.onInvalidate(keys)
	}
}
