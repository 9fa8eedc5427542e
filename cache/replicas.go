package cache

import (
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/redis/go-redis/v9"
)

// Replica reads: a cluster client with ReadOnly, RouteByLatency or
// RouteRandomly (and a Sentinel client made by redis.NewFailoverClusterClient
// with ReplicaOnly, RouteByLatency or RouteRandomly) sends GETs to replicas,
// which apply the master's writes a little later. Such a client needs
// WithReplicaReads, which bounds how stale those reads can be. See
// docs/scale.md.

// WithReplicaReads lets a client that reads from replicas serve this cache,
// and makes every write wait for those replicas: Set, Delete, the versioned
// writes, MarkStale, DeleteKeepingVersion and InvalidateTags return once
// every replica that a read may go to (those in the client's slot map)
// acknowledged the write, with WAIT on the masters the write reached. So a
// read that starts after a write returned never returns an older value,
// from any replica, on any instance. If some replica has not acknowledged
// within maxLag (it lags, is frozen, or cannot be asked), the write returns
// an error matching ErrRedis and ErrReplicaLag: it reached the master, and a
// read that goes to that replica may return the older value until it
// catches up; try the write again, as a consistency.Queue does. A miss read
// from a replica takes its lease on the master, which answers with the
// value if the master has it, and values read from replicas never enter the
// local tier.
//
// The wait is on the writer's side: give the option to every instance of
// the cache, those whose client reads from masters only too (their writes
// then wait for the replicas the others read). It needs a cluster client
// (redis.NewClusterClient, or redis.NewFailoverClusterClient under
// Sentinel), whose slot map lists the replicas; maxLag must be shorter than
// the client's ReadTimeout, which bounds the wait's reply. The Redis user
// needs WAIT and ROLE (docs/acl.md). A client that reads from replicas is
// refused by New without the option: its reads would have no bound.
func WithReplicaReads(maxLag time.Duration) Option {
	return func(c *config) {
		if maxLag < time.Millisecond {
			c.errs.Invalid("replica lag bound %v must be at least 1ms", maxLag)
		}
		c.replicaLag = maxLag
	}
}

// validateReplicas checks WithReplicaReads against the client.
func (c *config) validateReplicas(rdb redis.UniversalClient) {
	cc, cluster := rdb.(*redis.ClusterClient)
	switch {
	case transport.ReadsReplicas(rdb) && c.replicaLag == 0:
		c.errs.Invalid("the client reads from replicas (ReadOnly, RouteByLatency or RouteRandomly): without WithReplicaReads nothing bounds how stale its reads are")
	case c.replicaLag == 0:
	case !cluster:
		c.errs.Invalid("WithReplicaReads needs a cluster client (redis.NewClusterClient, or redis.NewFailoverClusterClient under Sentinel), whose slot map lists the replicas to wait for")
	default:
		// go-redis has filled in its defaults: 0 or less is no timeout.
		if rt := cc.Options().ReadTimeout; rt > 0 && c.replicaLag >= rt {
			c.errs.Invalid("replica lag bound %v not under the client's ReadTimeout %v, which would cut the wait short", c.replicaLag, rt)
		}
		c.noBraces("WithReplicaReads", "the barrier beside a key")
	}
}

// newReplicas is the replication barrier, nil when off.
func (c *config) newReplicas(rdb redis.UniversalClient) *transport.Replicas {
	cc, ok := rdb.(*redis.ClusterClient)
	if c.replicaLag == 0 || !ok {
		return nil
	}
	return transport.NewReplicas(cc, c.prefix, c.replicaLag)
}
