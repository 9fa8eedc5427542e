package cache

import (
	"context"
	"slices"
	"testing"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/redis/go-redis/v9"
)

// heldPipelines is a go-redis hook that holds each pipeline of ours until
// release is closed, saying on entered when it holds one.
type heldPipelines struct {
	rt      roundTrips
	entered chan struct{}
	release chan struct{}
}

func (h *heldPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *heldPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *heldPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, h.rt.ours) {
			h.entered <- struct{}{}
			<-h.release
		}
		return next(ctx, cmds)
	}
}

// A batch of queued reads that a plain read ending after Close starts runs
// on that read's caller's goroutine, not on a goroutine of the cache's
// outliving Close; every Get still gets its value.
func TestBatchStartedAfterCloseRunsOnItsCallersGoroutine(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[string](t, rdb)
	keys := batchKeys(transport.ReadsInFlight + 1)
	h, answers := holdTwoReads(t, rdb, c, keys)
	hp := &heldPipelines{rt: roundTrips{prefix: prefixFor(t)}, entered: make(chan struct{}, 1), release: make(chan struct{})}
	rdb.AddHook(hp)
	queued := getEach(c, context.Background(), keys[transport.ReadsInFlight:])
	waitQueued(t, c, c.keys.Key(keys[transport.ReadsInFlight]), 1)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	close(h.release) // the plain reads end; the first to finish sends the batch
	recvOr(t, hp.entered, "the batch's pipeline")
	if !c.redis.Wait(0) {
		t.Error("the batch runs on a goroutine of the cache's after Close returned")
	}
	close(hp.release)
	for i, ch := range append(answers, queued...) {
		if a := recvOr(t, ch, "a Get's answer"); a.err != nil || a.v != "v-"+keys[i] {
			t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
		}
	}
}
