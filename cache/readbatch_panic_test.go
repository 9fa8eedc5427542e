package cache

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/redis/go-redis/v9"
)

// panicOncePipeline panics in the first pipeline that carries one of the
// test's GETs.
type panicOncePipeline struct {
	rt     roundTrips
	panics atomic.Int64
}

func (h *panicOncePipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *panicOncePipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *panicOncePipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "get" && h.rt.ours(cmd) }) &&
			h.panics.Add(1) == 1 {
			panic("pipeline hook panics")
		}
		return next(ctx, cmds)
	}
}

// A go-redis hook that panics on the pipeline of queued reads panics on no
// goroutine of the cache's own (which would end the process): the queued
// callers get an error, and the node's queue goes on serving reads.
func TestQueuedReadsSurviveAPanickingPipelineHook(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		keys := batchKeys(transport.ReadsInFlight + 2)
		h, held := holdTwoReads(t, rdb, c, keys)
		rdb.AddHook(&panicOncePipeline{rt: roundTrips{prefix: prefixFor(t)}})
		queued := getEach(c, context.Background(), keys[transport.ReadsInFlight:])
		waitQueued(t, c, prefixFor(t)+keys[0], 2)
		close(h.release)
		for i, ch := range held {
			if a := recvOr(t, ch, "a held Get"); a.err != nil || a.v != "v-"+keys[i] {
				t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
			}
		}
		for _, ch := range queued {
			if a := recvOr(t, ch, "a queued Get"); a.err == nil {
				t.Errorf("queued Get = %q, nil; want the pipeline's panic as an error", a.v)
			}
		}
		// The queue moved on: reads of the node go out again (the held
		// hook's count of plain GETs drained meanwhile).
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-h.held:
				case <-stop:
					return
				}
			}
		}()
		for _, k := range keys {
			if v, err := c.Get(context.Background(), k, noLoad); err != nil || v != "v-"+k {
				t.Errorf("Get(%s) after the panic = %q, %v", k, v, err)
			}
		}
		checkFlightsIdle(t, c)
	})
}
