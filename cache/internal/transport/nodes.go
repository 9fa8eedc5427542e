package transport

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The queues of a cluster's masters and a ring's shards are kept in a
// map keyed by the node's go-redis client. Nodes come and go: a failover
// makes a replica the master of a shard, a replaced node is a new client, a
// ring shard goes down or is removed. A node's queues are made the first
// time a command on a key of the node is sent, which is when the client's
// routing names a node it has not served before, so that is when the map is
// pruned: the queues of every node that no longer serves the key they were
// made for are dropped. Queues dropped while still in use finish their
// commands (their callers hold them); a node still serving other keys gets
// fresh queues at its next command. The hot path (queues already made) does
// not change.

// readQueues holds a cache's queues of single-key commands (queue.go).
// The zero value is ready to use.
type readQueues struct {
	one   nodeQueue // a single node or a failover client
	nodes sync.Map  // *redis.Client (a cluster's master, a ring's shard) -> *nodeQueue
}

// queue returns the queues of the node that serves rkey: on a cluster
// its slot's master, on a ring its shard (each asked of the client's own
// routing, which it consults for the command anyway).
func (r *readQueues) queue(ctx context.Context, rdb redis.UniversalClient, rkey string) *nodeQueue {
	node, ok := NodeFor(ctx, rdb, rkey)
	if !ok {
		return &r.one // one node, or no slot map / no shard up: the client's own routing will tell
	}
	if q, ok := r.nodes.Load(node); ok {
		return q.(*nodeQueue)
	}
	q, loaded := r.nodes.LoadOrStore(node, &nodeQueue{key: rkey})
	if !loaded {
		r.prune(ctx, rdb)
	}
	return q.(*nodeQueue)
}

// NodeFor is the client of the node that serves rkey on a cluster (its
// slot's master) or a ring (its shard); ok is false on other clients or when
// the client cannot tell.
func NodeFor(ctx context.Context, rdb redis.UniversalClient, rkey string) (node *redis.Client, ok bool) {
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
		if node, ok := NodeFor(ctx, rdb, v.(*nodeQueue).key); !ok || node != k.(*redis.Client) {
			r.nodes.CompareAndDelete(k, v)
		}
		return true
	})
}

// nodeQueue is one node's queues: its reads and its writes.
type nodeQueue struct {
	key    string // a key the node served when the queue was made (nodes.go)
	reads  cmdQueue
	writes cmdQueue
}

// of is the node's queue of reads (read) or of writes.
func (n *nodeQueue) of(read bool) *cmdQueue {
	if read {
		return &n.reads
	}
	return &n.writes
}
