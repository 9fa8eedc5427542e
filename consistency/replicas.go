package consistency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/replwait"
	"github.com/redis/go-redis/v9"
)

// ErrReplicaLag is wrapped by the error of an invalidation that ran on the
// primary but was not acknowledged by the replicas WaitReplicas asks for in
// time. Invalidate then records it for a retry like any failed delete.
var ErrReplicaLag = errors.New("cacheguard: consistency: replicas did not acknowledge in time")

// WaitReplicas makes every invalidation of the target wait, after the
// delete, until n replicas have it, for at most timeout: for users who read
// from replicas, so that a delete that returned is not still missing on the
// replica the next read goes to. An invalidation whose confirmation does not
// come in time fails with ErrReplicaLag (and is retried through the queue,
// so the delete is repeated until the replicas confirm it or it is
// dead-lettered).
//
// The wait is Redis's WAIT, sent on the queue's client after a write of
// its own on the same connection (internal/replwait).
// The target's cache must therefore live on the queue's Redis primary; a
// Redis Cluster client is refused (its deletes land on several primaries).
func WaitReplicas(n int, timeout time.Duration) TargetOption {
	return func(t *Target) error {
		if n < 1 || timeout <= 0 {
			return fmt.Errorf("%w: WaitReplicas(%d, %v): need n >= 1 and a positive timeout", ErrInvalidOption, n, timeout)
		}
		if _, cluster := t.q.rdb.(*redis.ClusterClient); cluster {
			return fmt.Errorf("%w: WaitReplicas needs a single-primary client, not a cluster client", ErrInvalidOption)
		}
		t.replicas, t.waitFor = n, timeout
		return nil
	}
}

// waitReplicas writes a marker and WAITs on the same connection (a
// pipeline uses one) until n replicas acknowledged it, or timeout.
func (q *Queue) waitReplicas(ctx context.Context, n int, timeout time.Duration) error {
	got, err := replwait.Wait(ctx, q.pipelined, func(p redis.Pipeliner) { p.Incr(ctx, q.shards[0].Wait) }, n, timeout)
	if err != nil {
		return q.redisError("wait for replicas", err)
	}
	if got < int64(n) {
		return fmt.Errorf("%w: %d of %d within %v", ErrReplicaLag, got, n, timeout)
	}
	return nil
}
