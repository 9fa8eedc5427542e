//go:build unix

package cache

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// pipelineGate holds the first pipeline of the test's GETs before it is
// sent: sending receives one value when it gets there, and the pipeline goes
// on once open is closed.
type pipelineGate struct {
	rt      roundTrips
	once    sync.Once
	sending chan struct{}
	open    chan struct{}
}

func (h *pipelineGate) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipelineGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipelineGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "get" && h.rt.ours(cmd) }) {
			h.once.Do(func() {
				h.sending <- struct{}{}
				<-h.open
			})
		}
		return next(ctx, cmds)
	}
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

// The server freezes (SIGSTOP) with a pipeline of queued reads on the wire:
// every caller with a deadline, the queued ones and the ones behind them,
// returns by its deadline with its context's error; once the server goes on
// (SIGCONT) every read succeeds, and after Close no goroutine is left.
func TestQueuedReadsBoundedByDeadlineWhileFrozen(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	before := runtime.NumGoroutine()
	c := newCache[string](t, rdb)
	keys := batchKeys(readsInFlight + 40)
	h, held := holdTwoReads(t, rdb, c, keys)
	gate := &pipelineGate{rt: roundTrips{prefix: prefixFor(t)}, sending: make(chan struct{}, 1), open: make(chan struct{})}
	rdb.AddHook(gate)
	const budget = 500 * time.Millisecond
	bounded := func(keys []string) []chan error {
		out := make([]chan error, len(keys))
		for i, k := range keys {
			out[i] = make(chan error, 1)
			go func() {
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), budget)
				defer cancel()
				_, err := c.Get(ctx, k, noLoad)
				if el := time.Since(start); el > budget+time.Second {
					t.Errorf("Get(%s) took %v against a frozen server, budget %v", k, el, budget)
				}
				out[i] <- err
			}()
		}
		return out
	}
	// The first batch: queued while the two reads are held, then sent to
	// the frozen server.
	batch := getEach(c, context.Background(), keys[readsInFlight:readsInFlight+10])
	waitQueued(t, c, prefixFor(t)+keys[0], 10)
	close(h.release)
	stopDrain := drainHeld(t, h)
	for i, ch := range held {
		if a := recvOr(t, ch, "a held Get"); a.err != nil || a.v != "v-"+keys[i] {
			t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
		}
	}
	recvOr(t, gate.sending, "the pipeline")
	srv.Freeze()
	t.Cleanup(srv.Thaw)
	close(gate.open)
	// Behind it: reads sent at once (one place is free) and queued ones.
	late := bounded(keys[readsInFlight+10:])
	for _, ch := range late {
		if err := recvOr(t, ch, "a Get with a deadline"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get against a frozen server: %v, want context.DeadlineExceeded", err)
		}
	}
	srv.Thaw()
	for _, ch := range batch {
		if a := recvOr(t, ch, "a Get of the frozen batch"); a.err != nil && !errors.Is(a.err, ErrRedis) {
			t.Errorf("Get of the frozen batch: %q, %v", a.v, a.err)
		}
	}
	for _, k := range keys {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if v, err := c.Get(ctx, k, noLoad); err != nil || v != "v-"+k {
			t.Errorf("Get(%s) after the server went on = %q, %v", k, v, err)
		}
		cancel()
	}
	checkFlightsIdle(t, c)
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	rdb.Close()
	stopDrain()
	settleGoroutines(t, before)
}
