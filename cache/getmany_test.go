package cache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestGetManyOneLoadForAllMisses(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[user](t, rdb)
		db := map[string]user{}
		for i := 0; i < 50; i++ {
			db[fmt.Sprint(i)] = user{i, fmt.Sprint("u", i)}
		}
		var calls atomic.Int64
		var asked []string
		load := func(_ context.Context, keys []string) (map[string]user, error) {
			calls.Add(1)
			asked = keys
			out := map[string]user{}
			for _, k := range keys {
				if u, ok := db[k]; ok {
					out[k] = u
				}
			}
			return out, nil
		}
		// Warm a few keys through Get first.
		for _, k := range []string{"1", "2"} {
			if _, err := c.Get(ctx, k, func(_ context.Context, k string) (user, error) { return db[k], nil }); err != nil {
				t.Fatal(err)
			}
		}
		keys := []string{"1", "2", "3", "4", "49", "missing-a", "missing-b", "3"}
		got, err := c.GetMany(ctx, keys, load)
		if err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 1 || len(asked) != 5 {
			t.Fatalf("loader calls %d with %v; want 1 call for the 5 misses", calls.Load(), asked)
		}
		if len(got) != 5 || got["49"] != db["49"] || got["1"] != db["1"] {
			t.Fatalf("got %v", got)
		}
		if _, ok := got["missing-a"]; ok {
			t.Fatal("missing row in the result")
		}
		// Everything, absences included, is now cached.
		got, err = c.GetMany(ctx, keys, load)
		if err != nil || calls.Load() != 1 || len(got) != 5 {
			t.Fatalf("second GetMany: %v, %v, calls %d", got, err, calls.Load())
		}
		if _, err := c.Get(ctx, "missing-a", func(context.Context, string) (user, error) {
			t.Fatal("loader called for a cached absence")
			return user{}, nil
		}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get missing-a: %v", err)
		}
	})
}

func TestGetManyLoaderErrorReleasesLeases(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		boom := errors.New("db down")
		_, err := c.GetMany(ctx, []string{"a", "b", "c"}, func(context.Context, []string) (map[string]string, error) { return nil, boom })
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		for _, k := range []string{"a", "b", "c"} {
			if rdb.Exists(ctx, prefixFor(t)+k).Val() != 0 {
				t.Fatalf("lease on %q left behind", k)
			}
		}
	})
}

// A key whose lease is held elsewhere is waited for, and the holder's value is
// used without loading it again.
func TestGetManyWaitsForOtherHolder(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb, WithWait(10*time.Second))
		holder := newCache[string](t, rdb, WithPrefix(prefixFor(t)))
		entered := make(chan struct{})
		release := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			holder.Get(ctx, "b", func(context.Context, string) (string, error) {
				close(entered)
				<-release
				return "from holder", nil
			})
		}()
		<-entered
		var once bool
		c.hooks().OnLeaseWait = func(k string) {
			if k == "b" && !once {
				once = true
				close(release)
			}
		}
		got, err := c.GetMany(ctx, []string{"a", "b"}, func(_ context.Context, keys []string) (map[string]string, error) {
			if len(keys) != 1 || keys[0] != "a" {
				t.Errorf("loader asked for %v, want only a", keys)
			}
			return map[string]string{"a": "loaded"}, nil
		})
		<-done
		if err != nil || got["a"] != "loaded" || got["b"] != "from holder" {
			t.Fatalf("got %v, %v", got, err)
		}
	})
}
