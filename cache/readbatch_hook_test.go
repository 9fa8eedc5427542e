package cache

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

var errHookRefused = errors.New("refused by a pipeline hook")

// refusingPipeline answers every pipeline that carries one of the test's
// GETs with an error of its own, without sending it (as a rate limiter or a
// read-only switch in a hook does).
type refusingPipeline struct{ rt roundTrips }

func (h *refusingPipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *refusingPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *refusingPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "get" && h.rt.ours(cmd) }) {
			return errHookRefused
		}
		return next(ctx, cmds)
	}
}

// A go-redis hook that refuses the pipeline of queued reads without sending
// it fails each queued caller with the hook's error, as it fails a GET sent
// on its own: an unanswered GET is not an empty value (a corrupt entry, a
// load from the source and the breaker told of no failure).
func TestQueuedReadsRefusedByAPipelineHookFail(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		loads := &countingLoader[string]{rows: map[string]string{}}
		c := newCache[string](t, rdb)
		keys := batchKeys(readsInFlight + 3)
		h, held := holdTwoReads(t, rdb, c, keys)
		rdb.AddHook(&refusingPipeline{rt: roundTrips{prefix: prefixFor(t)}})
		queued := make([]chan getAnswer, 0, 3)
		for _, k := range keys[readsInFlight:] {
			ch := make(chan getAnswer, 1)
			queued = append(queued, ch)
			go func() {
				v, err := c.Get(context.Background(), k, loads.load)
				ch <- getAnswer{v, err}
			}()
		}
		waitQueued(t, c, prefixFor(t)+keys[0], 3)
		close(h.release)
		for i, ch := range held {
			if a := recvOr(t, ch, "a held Get"); a.err != nil || a.v != "v-"+keys[i] {
				t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
			}
		}
		for i, ch := range queued {
			if a := recvOr(t, ch, "a queued Get"); !errors.Is(a.err, ErrRedis) || !errors.Is(a.err, errHookRefused) {
				t.Errorf("queued Get(%s) = %q, %v; want ErrRedis with the hook's error", keys[readsInFlight+i], a.v, a.err)
			}
		}
		if n := loads.calls.Load(); n != 0 {
			t.Errorf("%d loads from the source for keys that are in Redis", n)
		}
		if s := c.Stats(); s.Corrupt != 0 {
			t.Errorf("%d corrupt entries counted for unanswered GETs", s.Corrupt)
		}
		checkFlightsIdle(t, c)
	})
}

type traceKey struct{}

// pipelineTraces records the traceKey value of the context every pipeline
// of the test's GETs is sent with (nil: none), as a tracing hook reads its
// parent span.
type pipelineTraces struct {
	rt  roundTrips
	mu  sync.Mutex
	got []any
}

func (h *pipelineTraces) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipelineTraces) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipelineTraces) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "get" && h.rt.ours(cmd) }) {
			h.mu.Lock()
			h.got = append(h.got, ctx.Value(traceKey{}))
			h.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

// The pipeline of queued reads is sent with the values of one of its
// callers' contexts (as a plain GET is with its caller's): a tracing hook
// finds a parent span there, instead of starting a trace of its own that
// no request belongs to.
func TestQueuedReadsCarryACallersContextValues(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		keys := batchKeys(readsInFlight + 3)
		h, held := holdTwoReads(t, rdb, c, keys)
		traces := &pipelineTraces{rt: roundTrips{prefix: prefixFor(t)}}
		rdb.AddHook(traces)
		ctx := context.WithValue(context.Background(), traceKey{}, "request-1")
		queued := getEach(c, ctx, keys[readsInFlight:])
		waitQueued(t, c, prefixFor(t)+keys[0], 3)
		close(h.release)
		for i, ch := range slices.Concat(held, queued) {
			if a := recvOr(t, ch, "a Get"); a.err != nil || a.v != "v-"+keys[i] {
				t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
			}
		}
		traces.mu.Lock()
		defer traces.mu.Unlock()
		if len(traces.got) != 1 || traces.got[0] != "request-1" {
			t.Errorf("pipelines sent with trace values %v; want one, with the callers' request-1", traces.got)
		}
	})
}

// droppingPipeline sends the pipelines of the test's GETs without the GET
// of key (a hook that filters commands), and reports no error.
type droppingPipeline struct{ key string }

func (h *droppingPipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *droppingPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *droppingPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		kept := slices.DeleteFunc(slices.Clone(cmds), func(cmd redis.Cmder) bool {
			return cmd.Name() == "get" && cmd.Args()[1] == h.key
		})
		return next(ctx, kept)
	}
}

// A go-redis hook that drops one GET from the pipeline of queued reads
// fails that caller with errNoReply; the others get their values.
func TestQueuedReadDroppedByAHookFails(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		keys := batchKeys(readsInFlight + 3)
		h, held := holdTwoReads(t, rdb, c, keys)
		dropped := keys[readsInFlight+1]
		rdb.AddHook(&droppingPipeline{key: prefixFor(t) + dropped})
		queued := getEach(c, context.Background(), keys[readsInFlight:])
		waitQueued(t, c, prefixFor(t)+keys[0], 3)
		close(h.release)
		for i, ch := range slices.Concat(held, queued) {
			a := recvOr(t, ch, "a Get")
			if keys[i] == dropped {
				if !errors.Is(a.err, ErrRedis) || !errors.Is(a.err, errNoReply) {
					t.Errorf("Get(%s), dropped from its pipeline = %q, %v; want ErrRedis and errNoReply", keys[i], a.v, a.err)
				}
				continue
			}
			if a.err != nil || a.v != "v-"+keys[i] {
				t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
			}
		}
		if s := c.Stats(); s.Corrupt != 0 {
			t.Errorf("%d corrupt entries counted for an unanswered GET", s.Corrupt)
		}
		checkFlightsIdle(t, c)
	})
}
