package benchmarks

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// rtCounter is a go-redis hook that counts round trips: one per command sent
// on its own, one per pipeline (a pipeline is written and read in one go);
// and commands: one per command, alone or in a pipeline. Every library under
// test gets its own client with its own counter, so redis-roundtrips/op is
// measured on the client side, the same way for all. The rueidis adapter,
// which has no go-redis client, counts its calls itself (count).
type rtCounter struct{ n, cmds atomic.Uint64 }

func (c *rtCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *rtCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(1)
		return next(ctx, cmd)
	}
}

func (c *rtCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(len(cmds))
		return next(ctx, cmds)
	}
}

// count records one round trip carrying cmds commands.
func (c *rtCounter) count(cmds int) {
	c.n.Add(1)
	c.cmds.Add(uint64(cmds))
}

func (c *rtCounter) load() uint64 { return c.n.Load() }

// commands returns the commands counted so far.
func (c *rtCounter) commands() uint64 { return c.cmds.Load() }

// countedClient returns a new client of the shared server with a round-trip
// counter installed.
func countedClient(tb testing.TB) (*redis.Client, *rtCounter) {
	c := newClient(tb)
	rt := &rtCounter{}
	c.AddHook(rt)
	return c, rt
}

var _ redis.Hook = (*rtCounter)(nil)

// quietLog discards what the caches report in the background (rejected
// fills, lost races): the benchmarks count those through Stats instead.
var quietLog = slog.New(slog.DiscardHandler)
