package consistency

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// 1,000 versioned sets of one key, in random order from 8 goroutines, leave
// the highest version.
func TestVersionedHighestWins(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[int](t, rdb)
		vw, err := NewVersioned[int](c, nil)
		if err != nil {
			t.Fatal(err)
		}
		const n, workers = 1000, 8
		order := rand.New(rand.NewPCG(1, 2)).Perm(n)
		var accepted atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += workers {
					ver := order[i] + 1
					ok, err := vw.Set(ctx, "k", ver, uint64(ver))
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						accepted.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		v, err := c.Get(ctx, "k", func(context.Context, string) (int, error) {
			t.Error("loader called: the key should be cached")
			return 0, nil
		})
		if err != nil || v != n {
			t.Fatalf("final value %d, %v; want %d", v, err, n)
		}
		a := accepted.Load()
		if a < 1 || a >= n {
			t.Fatalf("%d sets accepted: a random order must refuse some", a)
		}
		t.Logf("%d of %d sets landed; the rest were older than the stored version", a, n)
	})
}

// A versioned delete leaves a tombstone: an older set arriving later is
// refused, a newer one lands.
func TestVersionedTombstoneRefusesOlderSet(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		vw, _ := NewVersioned[string](c, nil)
		var loads atomic.Int64
		load := func(context.Context, string) (string, error) { loads.Add(1); return "db", nil }
		step := func(name string, got bool, err error, want bool) {
			t.Helper()
			if err != nil || got != want {
				t.Fatalf("%s = %v, %v; want %v", name, got, err, want)
			}
		}
		ok, err := vw.Set(ctx, "k", "v5", 5)
		step("set 5", ok, err, true)
		ok, err = vw.Delete(ctx, "k", 7)
		step("delete 7", ok, err, true)
		ok, err = vw.Set(ctx, "k", "v6", 6)
		step("set 6 after tombstone 7", ok, err, false)
		if _, err := c.Get(ctx, "k", load); !errors.Is(err, cache.ErrNotFound) || loads.Load() != 0 {
			t.Fatalf("read of tombstone: %v, %d loads; want ErrNotFound from the cache", err, loads.Load())
		}
		ok, err = vw.Delete(ctx, "k", 6)
		step("delete 6 after tombstone 7", ok, err, false)
		ok, err = vw.Set(ctx, "k", "v8", 8)
		step("set 8", ok, err, true)
		if v, err := c.Get(ctx, "k", load); err != nil || v != "v8" {
			t.Fatalf("read %q, %v", v, err)
		}
		if _, err := vw.Set(ctx, "k", "v0", 0); !errors.Is(err, ErrZeroVersion) {
			t.Fatalf("version 0: %v", err)
		}
	})
}

// Write and Remove run the database write and push its version; when Redis
// fails the versioned write, the key is invalidated through the fallback
// target's queue instead of keeping an older value.
func TestVersionedWriteFallsBackToQueuedDelete(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	clk := newFakeClock()
	q := newQueue(t, rdb, withClock(clk), WithoutWorker(), WithTimeout(time.Second))

	live := newCache[string](t, rdb)
	users := register(t, q, "users", live)
	vw, _ := NewVersioned[string](live, users)
	if err := vw.Write(ctx, "k", func(context.Context) (string, uint64, error) { return "v1", 1, nil }); err != nil {
		t.Fatal(err)
	}
	noLoad := func(context.Context, string) (string, error) { return "", errors.New("not cached") }
	if v, err := live.Get(ctx, "k", noLoad); err != nil || v != "v1" {
		t.Fatalf("after Write: %q", v)
	}
	boom := errors.New("deadlock")
	if err := vw.Write(ctx, "k", func(context.Context) (string, uint64, error) { return "", 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("Write err = %v", err)
	}
	reloaded := false
	if _, err := live.Get(ctx, "k", func(context.Context, string) (string, error) { reloaded = true; return "db", nil }); err != nil || !reloaded {
		t.Fatalf("a failed write (which may have committed) left the key cached: %v", err)
	}
	if err := vw.Remove(ctx, "k", func(context.Context) (uint64, error) { return 2, nil }); err != nil {
		t.Fatal(err)
	}
	if ok, _ := vw.Set(ctx, "k", "late v1", 1); ok {
		t.Fatal("set older than Remove's tombstone landed")
	}

	srv, _ := redistest.Single(t)
	dead := newCache[string](t, noRetryClient(t, srv))
	broken := register(t, q, "broken", dead)
	vb, _ := NewVersioned[string](dead, broken)
	srv.Kill()
	err := vb.Write(ctx, "k", func(context.Context) (string, uint64, error) { return "v3", 3, nil })
	if !errors.Is(err, cache.ErrRedis) {
		t.Fatalf("err = %v, want ErrRedis", err)
	}
	if n, _ := q.Pending(ctx); n != 1 {
		t.Fatalf("pending %d, want the fallback delete queued", n)
	}
}
