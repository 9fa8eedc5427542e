package cache

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// gate is a KeyLimiter that admits what its switches say and counts what it
// was asked.
type gate struct {
	mu           sync.Mutex
	reads, loads bool  // admitted
	err          error // returned with every decision
	asked        map[LimitOp][]string
}

func (g *gate) Allow(_ context.Context, op LimitOp, key string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.asked == nil {
		g.asked = map[LimitOp][]string{}
	}
	g.asked[op] = append(g.asked[op], key)
	if op == LimitRead {
		return g.reads, g.err
	}
	return g.loads, g.err
}

func (g *gate) set(reads, loads bool) {
	g.mu.Lock()
	g.reads, g.loads = reads, loads
	g.mu.Unlock()
}

// A refused load reaches neither the loader nor Redis's lease (nothing is
// left under the key) and answers ErrRateLimited; a refused read sends no
// GET; admitted again, the same Get loads and caches as usual.
func TestKeyRateLimitRefusesReadsAndLoads(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	ctx := context.Background()
	g := &gate{reads: true}
	c := newCache[string](t, rdb, WithKeyRateLimit(g))
	l := &countingLoader[string]{rows: map[string]string{"k": "v"}}
	if _, err := c.Get(ctx, "k", l.load); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("refused load: %v, want ErrRateLimited", err)
	}
	if l.calls.Load() != 0 {
		t.Fatal("the loader ran although its load was refused")
	}
	if n, _ := rdb.Exists(ctx, c.cfg.prefix+"k").Result(); n != 0 {
		t.Fatal("a refused load left a lease behind")
	}
	g.set(true, true)
	if v, err := c.Get(ctx, "k", l.load); err != nil || v != "v" {
		t.Fatalf("admitted: %q, %v", v, err)
	}
	g.set(false, true)
	hits := c.Stats().Hits
	if _, err := c.Get(ctx, "k", l.load); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("refused read: %v, want ErrRateLimited", err)
	}
	if st := c.Stats(); st.Hits != hits || st.RateLimited != 2 || l.calls.Load() != 1 {
		t.Fatalf("stats %+v, loads %d", st, l.calls.Load())
	}
}

// A refused read of a key the local tier still holds past its freshness is
// answered from it, as in an outage; past the stale bound it is not.
func TestKeyRateLimitServesTheLocalEntry(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	ctx := context.Background()
	g := &gate{reads: true, loads: true}
	c := localCache(t, rdb, WithKeyRateLimit(g))
	c.Get(ctx, "hot", func(context.Context, string) (string, error) { return "v", nil })
	e, ok := c.tier.Store().Get("hot")
	if !ok {
		t.Fatal("not admitted")
	}
	c.tier.Age(e, true, false)
	g.set(false, false)
	if v, err := c.Get(ctx, "hot", never(t)); err != nil || v != "v" {
		t.Fatalf("limited read of a locally held key: %q, %v", v, err)
	}
	if st := c.Stats(); st.RateLimitedLocal != 1 {
		t.Fatalf("answered locally %d times, want 1", st.RateLimitedLocal)
	}
	c.tier.Age(e, true, true)
	if _, err := c.Get(ctx, "hot", never(t)); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("past the stale bound: %v, want ErrRateLimited", err)
	}
}

// With a hot-key detector only hot keys ask the limiter; a decision that
// comes with an error is reported and followed.
func TestKeyRateLimitOnlyHotKeysAndReportsErrors(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	ctx := context.Background()
	boom := errors.New("store down")
	g := &gate{reads: true, loads: true, err: boom}
	var reported []error
	c := newCache[string](t, rdb, WithKeyRateLimit(g), WithLocal(1<<20), WithHotKeys(&hotSet{hot: map[string]bool{"hot": true}}),
		WithErrorHandler(func(err error) { reported = append(reported, err) }))
	<-c.bus.Subscribed()
	load := func(_ context.Context, k string) (string, error) { return "v:" + k, nil }
	for _, k := range []string{"cold", "hot"} {
		if v, err := c.Get(ctx, k, load); err != nil || v != "v:"+k {
			t.Fatalf("%s: %q, %v", k, v, err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if r, l := g.asked[LimitRead], g.asked[LimitLoad]; len(r) != 1 || r[0] != "hot" || len(l) != 1 || l[0] != "hot" {
		t.Fatalf("asked %v", g.asked)
	}
	if len(reported) != 2 || !errors.Is(reported[0], boom) {
		t.Fatalf("reported %v", reported)
	}
}

func TestWithKeyRateLimitNil(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithKeyRateLimit(nil)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("New: %v", err)
	}
}
