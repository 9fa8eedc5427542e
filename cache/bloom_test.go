package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Penetration: 100k reads of random absent ids with 10k present rows behind a
// 1% local Bloom filter. Loads stay within the false-positive rate, and the
// filter's negatives cost no Redis call at all.
func TestPenetrationBehindLocalBloom(t *testing.T) {
	srv, _ := redistest.Single(t)
	rdb := srv.Client()
	var cmds atomic.Int64
	rdb.AddHook(countHook{&cmds})
	ctx := context.Background()
	const present, requests, fp = 10_000, 100_000, 0.01
	f, err := bloom.NewLocal(present, fp)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, present)
	for i := range ids {
		ids[i] = fmt.Sprint("user:", i)
	}
	if err := f.Add(ctx, ids...); err != nil {
		t.Fatal(err)
	}
	f.MarkReady()
	c := newCache[string](t, rdb, WithBloom(f))
	var loads atomic.Int64
	load := func(context.Context, string) (string, error) { loads.Add(1); return "", ErrNotFound }
	for i := 0; i < requests; i++ {
		if _, err := c.Get(ctx, fmt.Sprint("absent:", rand.Uint64()), load); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	st := c.Stats()
	limit := int64(fp*requests*1.3) + 20
	t.Logf("%d requests for absent ids: %d filter rejects, %d loads (limit %d), %d Redis commands",
		requests, st.FilterRejects, loads.Load(), limit, cmds.Load())
	if loads.Load() > limit {
		t.Fatalf("%d loads, want at most %d", loads.Load(), limit)
	}
	if int64(st.FilterRejects)+loads.Load() != requests {
		t.Fatalf("rejects %d + loads %d != %d", st.FilterRejects, loads.Load(), requests)
	}
	// Each false positive costs a GET, a lease and a fill; rejects cost none.
	// +24: what a cache sends a few times, whatever the requests: the
	// server version probe, the generation reads (New, each subscription
	// Up), its subscription's setup, script loading on first use. 100,000
	// negatives reaching Redis would add far more.
	if cmds.Load() > 3*loads.Load()+24 {
		t.Fatalf("%d Redis commands for %d false positives: filter negatives reached Redis", cmds.Load(), loads.Load())
	}
}

// A warming filter rejects nothing; a filter error falls back to the normal
// path and is counted.
func TestBloomSafeModeAndErrors(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	f, _ := bloom.NewLocal(1000, 0.01) // not ready: warming up
	c := newCache[string](t, rdb, WithBloom(f))
	if v, err := c.Get(ctx, "new-row", func(context.Context, string) (string, error) { return "v", nil }); err != nil || v != "v" {
		t.Fatalf("warming filter rejected a row: %q, %v", v, err)
	}
	d := newCache[string](t, rdb, WithBloom(failingFilter{}))
	if v, err := d.Get(ctx, "k", func(context.Context, string) (string, error) { return "v", nil }); err != nil || v != "v" {
		t.Fatalf("filter error failed the read: %q, %v", v, err)
	}
	if d.Stats().FilterErrors != 1 {
		t.Fatalf("stats %+v", d.Stats())
	}
}

type failingFilter struct{}

func (failingFilter) MayContain(context.Context, string) (bool, error) {
	return true, errors.New("filter down")
}

// A Redis-shared filter behind the miss: hits never consult it; a key added
// through one instance is found through another at once.
func TestRedisBloomOnMiss(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := prefixFor(t) + "bloom"
		fa, err := bloom.NewRedis(ctx, rdb, name, 1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		fb, err := bloom.NewRedis(ctx, rdb, name, 1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if err := fa.Rebuild(ctx, func(yield func(string, error) bool) { yield("1", nil) }); err != nil {
			t.Fatal(err)
		}
		b := newCache[string](t, rdb, WithBloomOnMiss(fb), WithPrefix(prefixFor(t)))
		var loads atomic.Int64
		load := func(_ context.Context, k string) (string, error) { loads.Add(1); return "row " + k, nil }
		if _, err := b.Get(ctx, "2", load); !errors.Is(err, ErrNotFound) || loads.Load() != 0 {
			t.Fatalf("absent key: %v, %d loads", err, loads.Load())
		}
		// Insert path: the row is written, then added through instance A.
		if err := fa.Add(ctx, "2"); err != nil {
			t.Fatal(err)
		}
		if v, err := b.Get(ctx, "2", load); err != nil || v != "row 2" {
			t.Fatalf("added through A, read through B: %q, %v", v, err)
		}
		rejects := b.Stats().FilterRejects
		b.Get(ctx, "2", load) // a hit: the filter is not asked
		if b.Stats().FilterRejects != rejects || loads.Load() != 1 {
			t.Fatal("hit consulted the filter or loaded")
		}
	})
}
