package consistency

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/apicheck"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestRedisGoneContract: with Redis gone, the queue's calls fail with an
// error matching ErrRedis that names the prefix once.
func TestRedisGoneContract(t *testing.T) {
	s := redistest.Start(t)
	rdb := redistest.FastFail(t, s.Addr)
	q := newQueue(t, rdb, WithoutWorker())
	users := register(t, q, "users", newCache[string](t, rdb))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Kill()

	apicheck.RedisFailure(t, ErrRedis, "Target.Invalidate", users.Invalidate(ctx, "k"))
	apicheck.RedisFailure(t, ErrRedis, "Target.InvalidateAfter", users.InvalidateAfter(ctx, time.Second, "k"))
	_, err := q.Pending(ctx)
	apicheck.RedisFailure(t, ErrRedis, "Queue.Pending", err)
	_, err = q.DeadLetters(ctx, 10)
	apicheck.RedisFailure(t, ErrRedis, "Queue.DeadLetters", err)
}
