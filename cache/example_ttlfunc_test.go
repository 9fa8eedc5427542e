package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

type Article struct {
	ID    string
	Draft bool
}

// Each entry's TTL is chosen from its value: drafts change often and are
// not cached at all (0), published articles are cached for a day.
func ExampleValues_ttl() {
	mr := miniredis.NewMiniRedis()
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	articles, err := cache.New(rdb, cache.Values[Article]{TTL: func(_ string, a Article) time.Duration {
		if a.Draft {
			return 0 // served, not cached
		}
		return 24 * time.Hour // jittered like any TTL
	}}, cache.WithPrefix("article:"))
	if err != nil {
		panic(err)
	}
	defer articles.Close()
	load := func(_ context.Context, id string) (Article, error) { return Article{ID: id, Draft: id == "draft"}, nil }
	ctx := context.Background()
	for _, id := range []string{"published", "published", "draft", "draft"} {
		articles.Get(ctx, id, load)
	}
	fmt.Println("loads:", articles.Stats().Loads, "not cached:", articles.Stats().TTLZero)
	fmt.Println(mr.Exists("article:published"), mr.Exists("article:draft"))
	// Output:
	// loads: 3 not cached: 2
	// true false
}
