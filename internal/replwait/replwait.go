// Package replwait waits for a master's replicas: a write of one's own, then
// WAIT, on one connection. A master's replication stream is one ordered log,
// and WAIT counts the acknowledgements of everything its connection wrote:
// once the replicas acknowledge the marker, they have every write that
// completed on that master before the marker was sent. Package cache
// (WithReplicaReads) and package consistency (WaitReplicas) wait this way.
package replwait

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pipelined runs fn's commands in one pipeline on one connection, as a
// *redis.Client's Pipelined does.
type Pipelined func(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)

// Wait sends mark's write, then WAIT for n replicas for at most timeout, in
// one pipeline, and returns how many replicas acknowledged. The reply of
// the WAIT is bounded by the client's ReadTimeout, as in any pipeline:
// timeout must be shorter.
func Wait(ctx context.Context, pipelined Pipelined, mark func(redis.Pipeliner), n int, timeout time.Duration) (int64, error) {
	wait := redis.NewIntCmd(ctx, "wait", n, max(1, timeout.Milliseconds()))
	_, err := pipelined(ctx, func(p redis.Pipeliner) error {
		mark(p)
		return p.Process(ctx, wait)
	})
	if err != nil {
		return 0, err
	}
	return wait.Val(), nil
}
