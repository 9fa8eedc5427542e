package cache

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The README's configuration run as a fleet: three instances of one service,
// each with its own client, cache and fleet filter. A row inserted through
// one instance (Inserted, after its commit) is readable on the other two
// within the filter's bound, even where one of them had cached its absence
// before the insert. With a bloom.Local filter per instance, the other two
// answered ErrNotFound until their next Rebuild.
func TestFleetFilterRowInsertedThroughOneIsReadOnAll(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := t.Context()
		var mu sync.Mutex
		db := map[string]string{}
		for i := range 100 {
			db[strconv.Itoa(i)] = "row" + strconv.Itoa(i)
		}
		load := func(_ context.Context, key string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			if v, ok := db[key]; ok {
				return v, nil
			}
			return "", ErrNotFound
		}
		name := redistest.Name(t)
		const interval, timeout = 200 * time.Millisecond, 200 * time.Millisecond
		var caches []*Cache[string]
		var filters []*bloom.Fleet
		for range 3 {
			client := redistest.FromSpec(t, redistest.Spec(rdb), nil)
			f, err := bloom.NewFleet(ctx, client, name, 10_000, 0.01, bloom.WithHealthCheck(interval, timeout), bloom.WithLogger(quietLogger()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			filters = append(filters, f)
			caches = append(caches, newCache[string](t, client, WithBloom(f)))
		}
		keys := make([]string, 0, 100)
		for k := range db {
			keys = append(keys, k)
		}
		if err := filters[0].Rebuild(ctx, func(yield func(string, error) bool) {
			for _, k := range keys {
				if !yield(k, nil) {
					return
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		for i, f := range filters {
			deadline := time.Now().Add(10 * time.Second)
			for !f.Ready() || f.Stats().SafeMode != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("filter %d never ready", i)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		// Row 500 is let by the filter (as a false positive would be) and
		// its absence cached on instance 1 before the insert.
		if err := filters[2].Add(ctx, "500"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(interval + timeout)
		if _, err := caches[1].Get(ctx, "500", load); !errors.Is(err, ErrNotFound) {
			t.Fatalf("before the insert: %v", err)
		}
		for i, key := range []string{"200", "300", "500"} {
			mu.Lock()
			db[key] = "new" + key
			mu.Unlock()
			if err := caches[i%3].Inserted(ctx, key); err != nil {
				t.Fatal(err)
			}
			inserted := time.Now()
			for j, c := range caches {
				for {
					v, err := c.Get(ctx, key, load)
					if err == nil && v == "new"+key {
						break
					}
					if !errors.Is(err, ErrNotFound) {
						t.Fatalf("instance %d: Get(%s) = %q, %v", j, key, v, err)
					}
					if time.Since(inserted) > interval+timeout {
						t.Fatalf("instance %d: row %s inserted through instance %d is still not found %v later", j, key, i%3, time.Since(inserted))
					}
					time.Sleep(time.Millisecond)
				}
			}
		}
	})
}
