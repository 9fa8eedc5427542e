package transport

import (
	"context"

	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// RunScripts runs calls as script.Run does (by SHA, the calls answered
// NOSCRIPT again with their bodies); a lone call goes through the queue of
// its key's node (queue.go), sharing a round trip with the other
// single-key commands under way there (or, sent alone, as script.Process:
// EVALSHA, then EVAL on NOSCRIPT).
func (c *Redis) RunScripts(ctx context.Context, calls []script.Call) ([]*redis.Cmd, error) {
	if len(calls) != 1 || len(calls[0].Keys) != 1 {
		return script.Run(ctx, c.rdb, calls)
	}
	cmd := calls[0].EvalSha(ctx)
	if err := c.Send(ctx, calls[0].Keys[0], cmd, &calls[0]); err != nil {
		cmd = redis.NewCmd(ctx) // the sent one may still be written to
		cmd.SetErr(err)
	}
	return []*redis.Cmd{cmd}, cmd.Err()
}
