package consistency

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Newest-version-wins survives every delete path: after SetVersioned(v5) and
// a plain delete of the key (Invalidate, Update, a queued delete, the
// Versioned fallback), a late SetVersioned(v3) is refused, while readers
// still reload the row (the delete is a miss, not a cached absence).
func TestDeleteKeepsVersionHighWaterMark(t *testing.T) {
	paths := map[string]func(t *testing.T, q *Queue, tg *Target, vw *Versioned[string]){
		"Invalidate": func(t *testing.T, q *Queue, tg *Target, vw *Versioned[string]) {
			if err := tg.Invalidate(context.Background(), "k"); err != nil {
				t.Fatal(err)
			}
		},
		"Update": func(t *testing.T, q *Queue, tg *Target, vw *Versioned[string]) {
			err := tg.Update(context.Background(), []string{"k"}, func(context.Context) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if n, _, err := q.drain(context.Background()); err != nil || n != 0 {
				t.Fatalf("drained %d, %v before the delay", n, err)
			}
		},
		"QueuedDelete": func(t *testing.T, q *Queue, tg *Target, vw *Versioned[string]) {
			if err := tg.InvalidateAfter(context.Background(), 0, "k"); err != nil {
				t.Fatal(err)
			}
			if n, _, err := q.drain(context.Background()); err != nil || n != 1 {
				t.Fatalf("drained %d, %v", n, err)
			}
		},
		"VersionedFallback": func(t *testing.T, q *Queue, tg *Target, vw *Versioned[string]) {
			boom := errors.New("deadlock")
			err := vw.Write(context.Background(), "k", func(context.Context) (string, uint64, error) { return "", 0, boom })
			if !errors.Is(err, boom) {
				t.Fatal(err)
			}
		},
	}
	for name, del := range paths {
		t.Run(name, func(t *testing.T) {
			onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
				ctx := context.Background()
				q := newQueue(t, rdb, WithoutWorker(), WithTombstoneTTL(time.Minute))
				c := newCache[string](t, rdb)
				tg := register(t, q, "users", c)
				vw, _ := NewVersioned[string](c, tg)
				if ok, err := vw.Set(ctx, "k", "v5", 5); !ok || err != nil {
					t.Fatalf("set v5: %v, %v", ok, err)
				}
				del(t, q, tg, vw)
				if ok, err := vw.Set(ctx, "k", "v3", 3); ok || err != nil {
					t.Fatalf("late set v3 after the delete: landed %v, %v; want refused", ok, err)
				}
				rkey := prefixFor(t) + "c:k"
				if pttl := rdb.PTTL(ctx, rkey).Val(); pttl <= 0 || pttl > time.Minute {
					t.Fatalf("tombstone TTL %v, want within the configured minute", pttl)
				}
				loads := 0
				v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { loads++; return "db", nil })
				if err != nil || v != "db" || loads != 1 {
					t.Fatalf("read after the delete: %q, %v, %d loads; want the row reloaded", v, err, loads)
				}
				if ok, err := vw.Set(ctx, "k", "v6", 6); !ok || err != nil {
					t.Fatalf("newer set v6: %v, %v", ok, err)
				}
			})
		})
	}
}

// A key that never held a version is deleted outright: no tombstone is left
// behind for ordinary caches.
func TestDeleteWithoutVersionLeavesNothing(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	q := newQueue(t, rdb, WithoutWorker())
	c := newCache[string](t, rdb)
	tg := register(t, q, "users", c)
	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := tg.Invalidate(ctx, "k", "missing"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, prefixFor(t)+"c:k", prefixFor(t)+"c:missing").Val(); n != 0 {
		t.Fatalf("%d keys left", n)
	}
}
