package cache

import (
	"context"
	"sync/atomic"
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
// Pub/sub delivers at most once, so nothing here trusts it blindly:
//
//   - Publishing (invalidate_publish.go) is detached from the writer: once
//     Redis has the write, the message is sent on a context of its own and
//     retried, whatever happens to the writer's context. Messages carry a
//     per-publisher sequence number.
//   - The subscriber (invalidate_subscribe.go) checks its connection with a
//     PING every health interval and requires the reply within the health
//     timeout. The local tier is served only while the last answered PING is
//     recent (trustUntil): a reply to a PING sent at t proves every message
//     published before t has arrived, so a silent connection stops the tier
//     serving within interval+timeout of a lost message, without waiting for
//     the subscriber goroutine to notice. A missed reply, an error or the
//     server ending the subscription closes the connection and subscribes
//     again on a new one.
//   - The subscription's state gates the local tier through an epoch counter:
//     odd while the subscription is down (nothing is served from memory as
//     fresh, nothing is admitted), even once it is up. Whenever it comes
//     (back) up the whole tier is cleared first, so no entry that may have
//     missed a message survives a gap.
//   - A gap in a publisher's sequence numbers (a message lost or given up)
//     clears the tier too: the lost message's keys are unknown.
//
// The staleness bound of a local entry follows (see the package comment):
// never longer than its local TTL, and, when the invalidation reached Redis,
// never longer than health interval + health timeout after the write.

// afterWrite runs after a write to keys landed in Redis: it drops them from
// the local tier and tells the other instances to.
//
// It publishes even when this instance has no local tier: a writer service
// often has none while its readers do. It returns once the message is sent
// (or given up), or when ctx ends, whichever comes first; in the second case
// the message is still sent, detached from ctx.
func (c *Cache[V]) afterWrite(ctx context.Context, keys ...string) {
	if c.local != nil {
		c.dropLocal(keys)
	}
	c.publish(ctx, keys)
}

func (c *Cache[V]) sharded() bool {
	_, ok := c.rdb.(*redis.ClusterClient)
	return ok
}

// invalStats are the invalidation counters behind the Invalidation* and
// Subscription* fields of Stats.
type invalStats struct {
	sent, sendFailures, received, gaps, lost, decodeErrors, downs, refused atomic.Uint64
	lag, lagMax                                                            atomic.Int64 // nanoseconds
}

func (s *invalStats) fill(st *Stats) {
	st.InvalidationsSent = s.sent.Load()
	st.InvalidationSendFailures = s.sendFailures.Load()
	st.InvalidationsReceived = s.received.Load()
	st.InvalidationGaps = s.gaps.Load()
	st.InvalidationsLost = s.lost.Load()
	st.InvalidationDecodeErrors = s.decodeErrors.Load()
	st.SubscriptionDowns = s.downs.Load()
	st.SubscriptionRefusals = s.refused.Load()
	st.InvalidationLag = time.Duration(s.lag.Load())
	st.InvalidationLagMax = time.Duration(s.lagMax.Load())
}

func (s *invalStats) observeLag(d time.Duration) {
	s.lag.Store(int64(d))
	for {
		m := s.lagMax.Load()
		if int64(d) <= m || s.lagMax.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}
