package cache

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The read queues of a cluster's masters and a ring's shards are kept in a
// map keyed by the node's go-redis client. Nodes come and go: a failover
// makes a replica the master of a shard, a replaced node is a new client, a
// ring shard goes down or is removed. A queue is made the first time a key
// of its node is read, which is when the client's routing names a node it
// has not served before, so that is when the map is pruned: every queue
// whose node no longer serves the key it was made for is dropped. A queue
// dropped while still in use finishes its reads (its callers hold it); a
// node still serving other keys gets a fresh queue at its next read. The
// hot path (a queue already made) does not change.

// readQueues holds a cache's read queues. The zero value is ready to use.
type readQueues struct {
	one   readQueue // a single node or a failover client
	nodes sync.Map  // *redis.Client (a cluster's master, a ring's shard) -> *readQueue
}

// queue returns the read queue of the node that serves rkey: on a cluster
// its slot's master, on a ring its shard (each asked of the client's own
// routing, which it consults for the command anyway).
func (r *readQueues) queue(ctx context.Context, rdb redis.UniversalClient, rkey string) *readQueue {
	node, ok := nodeFor(ctx, rdb, rkey)
	if !ok {
		return &r.one // one node, or no slot map / no shard up: the client's own routing will tell
	}
	if q, ok := r.nodes.Load(node); ok {
		return q.(*readQueue)
	}
	q, loaded := r.nodes.LoadOrStore(node, &readQueue{key: rkey})
	if !loaded {
		r.prune(ctx, rdb)
	}
	return q.(*readQueue)
}

// nodeFor is the client of the node that serves rkey on a cluster (its
// slot's master) or a ring (its shard); ok is false on other clients or when
// the client cannot tell.
func nodeFor(ctx context.Context, rdb redis.UniversalClient, rkey string) (node *redis.Client, ok bool) {
	var err error
	switch rdb := rdb.(type) {
	case *redis.ClusterClient:
		node, err = rdb.MasterForKey(ctx, rkey)
	case *redis.Ring:
		node, err = rdb.GetShardClientForKey(rkey)
	default:
		return nil, false
	}
	return node, err == nil
}

// prune drops the queues whose node no longer serves the key the queue was
// made for, as the client's routing sees it now (no round trip).
func (r *readQueues) prune(ctx context.Context, rdb redis.UniversalClient) {
	r.nodes.Range(func(k, v any) bool {
		if node, ok := nodeFor(ctx, rdb, v.(*readQueue).key); !ok || node != k.(*redis.Client) {
			r.nodes.CompareAndDelete(k, v)
		}
		return true
	})
}
