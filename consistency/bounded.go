package consistency

import (
	"context"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

// Every Redis call of the queue goes through script, pipelined or
// call.Do with q.calls (internal/call), so that it returns by its context
// on any go-redis client, with or without ContextTimeoutEnabled. A call
// left running at its deadline finishes on a goroutine of its own within
// the client's timeouts, counted in q.flight, which Close waits for. Its
// outcome needs no handling: a write that lands late (a recorded delete, a
// claim, an ack) leaves the queue as the same write in time would, and at
// worst runs a delete once more.

// script runs s on the queue's client, bounded by ctx.
func (q *Queue) script(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd, err := call.Do(q.calls, ctx, 0, func(ctx context.Context) (*redis.Cmd, error) {
		cmd := s.Run(ctx, q.rdb, keys, args...)
		return cmd, cmd.Err()
	}, nil)
	if cmd == nil { // abandoned
		cmd = redis.NewCmd(ctx)
		cmd.SetErr(err)
	}
	return cmd
}

// pipelined runs fn's commands in one pipeline on the queue's client,
// bounded by ctx.
func (q *Queue) pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	return call.Do(q.calls, ctx, 0, func(ctx context.Context) ([]redis.Cmder, error) {
		return pipe.Run(ctx, q.rdb.Pipeline(), fn)
	}, nil)
}
