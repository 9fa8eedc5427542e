package cache

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

var errHookRefused = errors.New("refused by a pipeline hook")

// ourPipelines is a go-redis hook that hands every pipeline carrying one
// of the test's GETs to fn, which sends it with next (or does not).
type ourPipelines struct {
	rt roundTrips
	fn func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error
}

func onOurPipelines(t *testing.T, fn func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error) *ourPipelines {
	return &ourPipelines{rt: roundTrips{prefix: prefixFor(t)}, fn: fn}
}

func (h *ourPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *ourPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *ourPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "get" && h.rt.ours(cmd) }) {
			return h.fn(ctx, cmds, next)
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
		keys := batchKeys(transport.ReadsInFlight + 3)
		h, held := holdTwoReads(t, rdb, c, keys)
		// A hook refuses the pipeline (a rate limiter, a read-only switch).
		rdb.AddHook(onOurPipelines(t, func(context.Context, []redis.Cmder, redis.ProcessPipelineHook) error {
			return errHookRefused
		}))
		queued := make([]chan getAnswer, 0, 3)
		for _, k := range keys[transport.ReadsInFlight:] {
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
				t.Errorf("queued Get(%s) = %q, %v; want ErrRedis with the hook's error", keys[transport.ReadsInFlight+i], a.v, a.err)
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

// The pipeline of queued reads is sent with the values of one of its
// callers' contexts (as a plain GET is with its caller's): a tracing hook
// finds a parent span there, instead of starting a trace of its own that
// no request belongs to.
func TestQueuedReadsCarryACallersContextValues(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		keys := batchKeys(transport.ReadsInFlight + 3)
		h, held := holdTwoReads(t, rdb, c, keys)
		// A tracing hook reads its parent span from the context.
		var mu sync.Mutex
		var traces []any
		rdb.AddHook(onOurPipelines(t, func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
			mu.Lock()
			traces = append(traces, ctx.Value(traceKey{}))
			mu.Unlock()
			return next(ctx, cmds)
		}))
		ctx := context.WithValue(context.Background(), traceKey{}, "request-1")
		queued := getEach(c, ctx, keys[transport.ReadsInFlight:])
		waitQueued(t, c, prefixFor(t)+keys[0], 3)
		close(h.release)
		for i, ch := range slices.Concat(held, queued) {
			if a := recvOr(t, ch, "a Get"); a.err != nil || a.v != "v-"+keys[i] {
				t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(traces) != 1 || traces[0] != "request-1" {
			t.Errorf("pipelines sent with trace values %v; want one, with the callers' request-1", traces)
		}
	})
}

// A go-redis hook that drops one GET from the pipeline of queued reads
// fails that caller with pipe.ErrNoReply; the others get their values.
func TestQueuedReadDroppedByAHookFails(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		keys := batchKeys(transport.ReadsInFlight + 3)
		h, held := holdTwoReads(t, rdb, c, keys)
		dropped := keys[transport.ReadsInFlight+1]
		// A hook filters the GET of dropped out, and reports no error.
		rdb.AddHook(onOurPipelines(t, func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
			return next(ctx, slices.DeleteFunc(slices.Clone(cmds), func(cmd redis.Cmder) bool {
				return cmd.Args()[1] == prefixFor(t)+dropped
			}))
		}))
		queued := getEach(c, context.Background(), keys[transport.ReadsInFlight:])
		waitQueued(t, c, prefixFor(t)+keys[0], 3)
		close(h.release)
		for i, ch := range slices.Concat(held, queued) {
			a := recvOr(t, ch, "a Get")
			if keys[i] == dropped {
				if !errors.Is(a.err, ErrRedis) || !errors.Is(a.err, pipe.ErrNoReply) {
					t.Errorf("Get(%s), dropped from its pipeline = %q, %v; want ErrRedis and pipe.ErrNoReply", keys[i], a.v, a.err)
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

// pipelineGate holds the first pipeline of the test's GETs before it is
// sent: sending receives one value when it gets there, and the pipeline goes
// on once open is closed.
type pipelineGate struct {
	*ourPipelines
	once    sync.Once
	sending chan struct{}
	open    chan struct{}
}

func newPipelineGate(t *testing.T) *pipelineGate {
	g := &pipelineGate{sending: make(chan struct{}, 1), open: make(chan struct{})}
	g.ourPipelines = onOurPipelines(t, func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
		g.once.Do(func() {
			g.sending <- struct{}{}
			<-g.open
		})
		return next(ctx, cmds)
	})
	return g
}

// drainHeld lets every later plain GET of h's keys through, until stop is
// called (or the test ends).
func drainHeld(t *testing.T, h *heldReads) (stop func()) {
	done := make(chan struct{})
	stop = sync.OnceFunc(func() { close(done) })
	t.Cleanup(stop)
	go func() {
		for {
			select {
			case <-h.held:
			case <-done:
				return
			}
		}
	}()
	return stop
}

// settleGoroutines waits until no more goroutines run than before, failing
// the test with their stacks if some stay.
func settleGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
