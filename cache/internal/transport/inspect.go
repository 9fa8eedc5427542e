package transport

import (
	"context"
	"slices"

	"github.com/redis/go-redis/v9"
)

// What the queues hold, for tests that pin how commands share round trips.

// Node is one node's queues (NodeOf).
type Node struct{ q *nodeQueue }

// NodeOf returns the queues of the node that serves rkey.
func (c *Redis) NodeOf(ctx context.Context, rkey string) Node {
	return Node{c.queues.queue(ctx, c.rdb, rkey)}
}

// Waiting returns the commands waiting in n's queues (reads, then writes).
func (n Node) Waiting() []redis.Cmder {
	var out []redis.Cmder
	for _, q := range []*cmdQueue{&n.q.reads, &n.q.writes} {
		q.mu.Lock()
		for _, g := range q.waiting {
			out = append(out, g.cmd)
		}
		q.mu.Unlock()
	}
	return out
}

// Load is how many commands of n's queues are under way and waiting.
func (n Node) Load() (busy, waiting int) {
	for _, q := range []*cmdQueue{&n.q.reads, &n.q.writes} {
		q.mu.Lock()
		busy, waiting = busy+q.busy, waiting+len(q.waiting)
		q.mu.Unlock()
	}
	return busy, waiting
}

// Nodes lists the addresses of the nodes (a cluster's masters, a ring's
// shards) the transport has queues for, sorted.
func (c *Redis) Nodes() []string {
	var addrs []string
	c.queues.nodes.Range(func(k, _ any) bool {
		addrs = append(addrs, k.(*redis.Client).Options().Addr)
		return true
	})
	slices.Sort(addrs)
	return addrs
}

// WaitingReads is how many reads wait in n's queue of reads.
func (n Node) WaitingReads() int {
	n.q.reads.mu.Lock()
	defer n.q.reads.mu.Unlock()
	return len(n.q.reads.waiting)
}
