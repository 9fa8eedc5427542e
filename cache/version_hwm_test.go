package cache

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/write"
	"github.com/redis/go-redis/v9"
)

// A key's version is a high-water mark that plain writes keep: after a
// versioned write at 5, a fill, a plain Set or a MarkStale must not let a
// versioned write at 3 (a late, older update) land.

func refuses(t *testing.T, c *Cache[string], key string, version uint64) {
	t.Helper()
	ok, err := c.SetVersioned(context.Background(), key, "older", version)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatalf("SetVersioned(%d) landed below the key's version high-water mark", version)
	}
}

// DeleteKeepingVersion leaves a version tombstone (what consistency's
// invalidation does with WithTombstoneTTL); the next Get misses and fills.
// The fill must carry the tombstone's version, not write version 0 below it.
func TestFillOverTombstoneKeepsVersion(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		if _, err := c.SetVersioned(ctx, "k", "v5", 5); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteKeepingVersion(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "from db", nil })
		if err != nil || v != "from db" {
			t.Fatalf("Get = %q, %v", v, err)
		}
		refuses(t, c, "k", 3)
		if ok, err := c.SetVersioned(ctx, "k", "v6", 6); err != nil || !ok {
			t.Fatalf("SetVersioned(6) = %v, %v: a newer write must land", ok, err)
		}
	})
}

// The same through GetMany's fill.
func TestGetManyFillOverTombstoneKeepsVersion(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		if _, err := c.SetVersioned(ctx, "k", "v5", 5); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteKeepingVersion(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		_, err := c.GetMany(ctx, []string{"k", "j"}, func(_ context.Context, keys []string) (map[string]string, error) {
			m := map[string]string{}
			for _, k := range keys {
				m[k] = "from db"
			}
			return m, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		refuses(t, c, "k", 3)
	})
}

// A plain Set after a versioned write keeps the version.
func TestSetKeepsVersion(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		if _, err := c.SetVersioned(ctx, "k", "v5", 5); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, "k", "plain"); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(ctx, "k", nil2); err != nil || v != "plain" {
			t.Fatalf("Get = %q, %v", v, err)
		}
		refuses(t, c, "k", 3)
		if err := c.DeleteKeepingVersion(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, "k", "over the tombstone"); err != nil {
			t.Fatal(err)
		}
		refuses(t, c, "k", 4)
	})
}

// MarkStale leaves a version tombstone as it is: deleting it would let an
// older versioned write land.
func TestMarkStaleKeepsVersionTombstone(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		if _, err := c.SetVersioned(ctx, "k", "v5", 5); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteKeepingVersion(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		if err := c.MarkStale(ctx, time.Second, "k"); err != nil {
			t.Fatal(err)
		}
		refuses(t, c, "k", 3)
	})
}

func nil2(context.Context, string) (string, error) { return "loaded", nil }

// isSetWrite reports whether cmd is Set's write (the script that keeps the
// key's version, by SHA or by body) and Redis ran it (err is the command's,
// as a hook sees it).
func isSetWrite(cmd redis.Cmder, err error) bool {
	args := cmd.Args()
	if err != nil || len(args) < 2 {
		return false
	}
	switch cmd.Name() {
	case "evalsha":
		return args[1] == write.SetKeepingVersionScript.Hash()
	case "eval":
		src, _ := args[1].(string)
		return redis.NewScript(src).Hash() == write.SetKeepingVersionScript.Hash()
	}
	return false
}
