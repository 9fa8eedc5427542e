package cache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// roundTrips counts the round trips a client makes for keys under prefix: one
// per command, one per pipeline. gate, when set, holds every GET of a key
// under prefix until it is closed.
type roundTrips struct {
	prefix string
	n      atomic.Int64
	gate   atomic.Pointer[chan struct{}]
}

func (h *roundTrips) ours(cmd redis.Cmder) bool {
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.HasPrefix(s, h.prefix) {
			return true
		}
	}
	return false
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.ours(cmd) {
			h.n.Add(1)
			if g := h.gate.Load(); g != nil && cmd.Name() == "get" {
				<-*g
			}
		}
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if h.ours(cmd) {
				h.n.Add(1)
				break
			}
		}
		if g := h.gate.Load(); g != nil && slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "get" && h.ours(cmd) }) {
			<-*g
		}
		return next(ctx, cmds)
	}
}

// joinCounter closes all once n calls joined another's read.
func joinCounter(n int64) (*hooks, <-chan struct{}) {
	var joined atomic.Int64
	all := make(chan struct{})
	return &hooks{OnJoin: func(string) {
		if joined.Add(1) == n {
			close(all)
		}
	}}, all
}

// waitOr waits for ch, giving up after a while so that a broken coalescing
// fails the count below instead of hanging the test.
func waitOr(ch <-chan struct{}) {
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
	}
}

// 200 goroutines stampeding one absent key share one GET, one lease attempt
// and one fill: a handful of round trips, not one or two per goroutine.
func TestStampedeRoundTrips(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		const n = 200
		rt := &roundTrips{prefix: prefixFor(t)}
		rdb.AddHook(rt)
		h, all := joinCounter(n - 1)
		c := newCache[string](t, rdb, withHooks(h))
		var loads atomic.Int64
		load := func(context.Context, string) (string, error) {
			loads.Add(1)
			waitOr(all) // every other caller has joined this read
			return "v", nil
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := c.Get(context.Background(), "k", load)
				if err == nil && v != "v" {
					err = fmt.Errorf("got %q", v)
				}
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := loads.Load(); got != 1 {
			t.Fatalf("loader ran %d times, want 1", got)
		}
		// GET, SET NX GET, the fill (EVALSHA, and EVAL the first time).
		if got := rt.n.Load(); got > 10 {
			t.Fatalf("stampede of %d goroutines cost %d round trips, want <= 10", n, got)
		}
		t.Logf("stampede: %d round trips", rt.n.Load())
	})
}

// 200 goroutines reading a key present in Redis share one GET.
func TestWarmReadRoundTrips(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		const n = 200
		ctx := context.Background()
		rt := &roundTrips{prefix: prefixFor(t)}
		rdb.AddHook(rt)
		h, all := joinCounter(n - 1)
		c := newCache[string](t, rdb, withHooks(h))
		if err := c.Set(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		rt.gate.Store(&gate)
		rt.n.Store(0)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) {
					return "", fmt.Errorf("loader called on a hit")
				})
				if err == nil && v != "v" {
					err = fmt.Errorf("got %q", v)
				}
				if err != nil {
					errs <- err
				}
			}()
		}
		waitOr(all) // every other caller joined the first GET, held here
		close(gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := rt.n.Load(); got > 20 {
			t.Fatalf("%d concurrent reads of a present key cost %d round trips, want <= 20", n, got)
		}
		if s := c.Stats(); s.Hits != n {
			t.Fatalf("Stats.Hits = %d, want %d (one per call)", s.Hits, n)
		}
		t.Logf("warm read: %d round trips", rt.n.Load())
	})
}
