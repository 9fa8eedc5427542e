package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestVersionedSetsKeepTheHighest(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		const n = 1000
		versions := rand.Perm(n)
		var wg sync.WaitGroup
		work := make(chan int)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for v := range work {
					if _, err := c.SetVersioned(ctx, "k", fmt.Sprint("v", v), uint64(v)); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		for _, v := range versions {
			work <- v
		}
		close(work)
		wg.Wait()
		got, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "loaded", nil })
		if err != nil || got != fmt.Sprint("v", n-1) {
			t.Fatalf("Get = %q, %v; want v%d", got, err, n-1)
		}
	})
}

func TestVersionCompareIsExactOverUint64(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[string](t, rdb)
	for _, step := range []struct {
		v    uint64
		want bool
	}{{1 << 53, true}, {1<<53 + 1, true}, {1 << 53, false}, {math.MaxUint64, true}, {math.MaxUint64 - 1, false}, {math.MaxUint64, false}} {
		ok, err := c.SetVersioned(ctx, "k", fmt.Sprint(step.v), step.v)
		if err != nil || ok != step.want {
			t.Fatalf("SetVersioned(%d) = %v, %v; want %v", step.v, ok, err, step.want)
		}
	}
}

func TestTombstoneRefusesOlderSet(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		if ok, _ := c.SetVersioned(ctx, "k", "v5", 5); !ok {
			t.Fatal("first set refused")
		}
		if ok, _ := c.DeleteVersioned(ctx, "k", 4); ok {
			t.Fatal("older delete accepted")
		}
		if ok, err := c.DeleteVersioned(ctx, "k", 7); !ok || err != nil {
			t.Fatalf("delete v7: %v, %v", ok, err)
		}
		if ok, _ := c.SetVersioned(ctx, "k", "v6", 6); ok {
			t.Fatal("set older than the tombstone accepted")
		}
		if _, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "db", nil }); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get on a tombstone: %v, want ErrNotFound", err)
		}
		if ok, _ := c.SetVersioned(ctx, "k", "v8", 8); !ok {
			t.Fatal("newer set refused")
		}
	})
}

// A versioned set replaces a lease, so the in-flight fill is refused.
func TestVersionedSetBeatsInFlightFill(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[string](t, rdb)
	c.hooks().AfterLoad = func(key string) { c.SetVersioned(ctx, key, "pushed", 3) }
	c.Get(ctx, "k", func(context.Context, string) (string, error) { return "loaded", nil })
	c.hooks().AfterLoad = nil
	if v, _ := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "x", nil }); v != "pushed" {
		t.Fatalf("got %q", v)
	}
}
