package main

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// failFastClient is the client of the restart runs: one per run, so that
// both caches start from the same connection state, and without command
// retries or dial retries, so that while Redis is down a request fails at
// once instead of queueing behind the client's reconnect backoff. Both caches
// then show the outage as it is: the naive one by querying the database,
// cacheguard by returning errors.
func failFastClient(addr string) redis.UniversalClient {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
}

// callCounter counts round trips to Redis (a pipeline is one), in all and
// on the current run's meter.
type callCounter struct {
	n     atomic.Int64
	off   atomic.Bool
	meter atomic.Pointer[meter]
}

func (h *callCounter) count() {
	if h.off.Load() {
		return
	}
	h.n.Add(1)
	if m := h.meter.Load(); m != nil {
		m.redisCall()
	}
}

func (h *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count()
		return next(ctx, cmd)
	}
}

func (h *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count()
		return next(ctx, cmds)
	}
}
