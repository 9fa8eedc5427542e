package cache

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A version tombstone left by DeleteKeepingVersion is a plain miss to
// readers: it reloads and is not counted as corrupt data.
func TestTombstoneIsAPlainMiss(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[user](t, rdb)
		if _, err := c.SetVersioned(ctx, "a", user{1, "v5"}, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := c.SetVersioned(ctx, "b", user{2, "v5"}, 5); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteKeepingVersion(ctx, time.Minute, "a", "b"); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(ctx, "a", func(context.Context, string) (user, error) { return user{1, "db"}, nil })
		if err != nil || got.Name != "db" {
			t.Fatalf("Get after the delete: %v, %v", got, err)
		}
		many, err := c.GetMany(ctx, []string{"b"}, func(_ context.Context, keys []string) (map[string]user, error) {
			return map[string]user{"b": {2, "db"}}, nil
		})
		if err != nil || many["b"].Name != "db" {
			t.Fatalf("GetMany after the delete: %v, %v", many, err)
		}
		if n := c.Stats().Corrupt; n != 0 {
			t.Fatalf("Corrupt = %d after reading tombstones; want 0", n)
		}
	})
}
